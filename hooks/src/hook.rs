//! The `Hook` trait: one call per burst, a verdict per packet.

use crate::HookBurst;

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
    /// [`BuildContext`](crate::BuildContext) the hook was built with. A hook
    /// keeps per-worker state indexed by it.
    pub worker: usize,
    /// The point and the port (input port at ingress, output port at
    /// egress) of the chain being run.
    pub point: HookPoint,
    pub port: u16,
    /// Monotonic time in nanoseconds, read once per burst.
    pub now_ns: u64,
}

/// A packet function. Implementations are safe Rust and must not block: they
/// run on a worker lcore between `rx_burst` and `tx_burst`.
///
/// The pipeline calls [`Hook::process`] once per burst, with every packet
/// that reached this point still accepted. A hook sets verdicts through the
/// burst; packets it leaves alone are accepted. A hook must not panic on any
/// input bytes: a property test feeds every built-in hook arbitrary bytes.
///
/// At either point a hook may change a packet's mark and class and its
/// frame's bytes, nothing else ([`HookPacket`](crate::HookPacket) is the
/// view that says so): the metadata the pipeline routes by is read-only to
/// it, and a frame it wrote is checked again before it is routed or sent.
pub trait Hook: Send + Sync {
    /// One burst. Called from several workers at once (each with its own
    /// `cx.worker`), so per-worker state lives behind `cx.worker`.
    fn process(&self, cx: &HookContext, burst: &mut HookBurst<'_, '_>);

    /// Packets this hook stole (verdict `Stolen`) in the burst just
    /// processed, now owned by the hook: keep them (bounded!) or drop them
    /// (which frees them). The default drops them.
    fn take(&self, cx: &HookContext, packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>) {
        let _ = cx;
        packets.for_each(drop);
    }

    /// Whether the hook is flow-pure, so that the pipeline may remember
    /// its answer per flow and not call it for a packet of a flow it has
    /// answered (the router's flow memo). A flow-pure hook promises:
    ///
    /// - its verdict and its changes to the mark and class are a function
    ///   of the packet's [`FlowSummary`](crate::FlowSummary), of `meta()` (ports,
    ///   mark, class, VLAN, packet type; not `next_hop`, which a route
    ///   change may move within one output port), of `cx.point` and
    ///   `cx.port`, and of its configuration: not of the time, of other
    ///   bytes of the frame, or of the packets before;
    /// - its changes to the mark and class matter only to the hooks after it: on a
    ///   remembered flow they are not made (the memo answers for every
    ///   hook of both points, and the burst leaves without its metadata);
    /// - it never changes the frame's bytes and never steals;
    /// - the only state it keeps per packet is counters, and it records
    ///   with [`HookBurst::set_token`] a token per packet from which
    ///   [`Hook::replay`] counts the packet again;
    /// - or, if it keeps other state per packet (a connection table), it
    ///   [`confirms`](Hook::confirms): its answer is a function of the
    ///   above and of that state, the token records the state too, a packet
    ///   that moves the state is never remembered
    ///   ([`HookBurst::forget_flow`]), and [`Hook::confirm`] checks, before
    ///   the pipeline answers a packet from its memo, that the state is
    ///   still the one remembered, and makes the same change to it (a
    ///   timer restarted) that seeing the packet would.
    ///
    /// The default is false: the hook sees every packet.
    fn flow_pure(&self) -> bool {
        false
    }

    /// Count packets the pipeline answered from its flow memo for this
    /// hook, as `process` would have counted them: `tokens` are the tokens
    /// the hook gave each packet's flow. Called once per burst, only for a
    /// [`Hook::flow_pure`] hook.
    fn replay(&self, cx: &HookContext, tokens: &[u32]) {
        let _ = (cx, tokens);
    }

    /// Whether the pipeline must call [`Hook::confirm`] before it answers
    /// a packet for this (flow-pure) hook from its memo. Read once, when
    /// the chain is built.
    fn confirms(&self) -> bool {
        false
    }

    /// For a hook that [`confirms`](Hook::confirms): the packets of a run
    /// the pipeline is about to answer from its flow memo, each packet's
    /// flow summary in `flows` and its remembered token in `tokens`.
    /// Returns how many leading packets may be answered: for each, the
    /// state its token records still holds, and the hook has made the
    /// change seeing the packet would have made (the rest meet the hooks;
    /// they may meet them after a change made here, which must therefore
    /// be one that seeing the packet again repeats harmlessly, such as a
    /// timer restarted at `cx.now_ns`). Counts nothing: [`Hook::replay`]
    /// counts the packets answered.
    fn confirm(&self, cx: &HookContext, flows: &[crate::FlowSummary], tokens: &[u32]) -> usize {
        let _ = (cx, tokens);
        flows.len()
    }

    /// [`Hook::confirm`] with each packet's [`Lease`](crate::Lease) (what
    /// this hook gave the memo for the flow the last time it confirmed it;
    /// [`Lease::NONE`](crate::Lease::NONE) at first; `leases[k]` is packet
    /// `k`'s, and packets past its end have none). A hook may confirm a
    /// packet whose lease still holds without looking at the flow's state
    /// (nor at its summary: [`Flows`](crate::Flows) may make each summary
    /// when asked), and gives a new lease for each packet it confirmed
    /// otherwise. The pipeline keeps at most one hook's leases per flow,
    /// and calls this for that hook only. Default: [`Hook::confirm`],
    /// leases unused.
    fn confirm_leased(
        &self,
        cx: &HookContext,
        flows: crate::Flows<'_>,
        tokens: &[u32],
        leases: &mut [crate::Lease],
    ) -> usize {
        let _ = leases;
        let mut all = [crate::FlowSummary::default(); crate::MAX_BURST];
        let n = flows.fill(&mut all);
        self.confirm(cx, &all[..n], tokens)
    }

    /// Counters of the hook's own (e.g. a connection table's size and
    /// refusals), by name, for the statistics. Read from the control
    /// lcore, so they are atomics or summed per-worker values.
    fn stats(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// A packet the pipeline handed over with a `Stolen` verdict. Dropping it
/// returns its buffer to the pool it came from.
pub trait OwnedPacket: Send {
    fn data(&self) -> &[u8];
    fn data_mut(&mut self) -> &mut [u8];
    fn meta(&self) -> &crate::PacketMeta;
}
