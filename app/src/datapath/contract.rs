//! The contract every stage keeps, in the manner of grout's nodes and VPP's
//! graph nodes: one signature, `fn run(cx: &mut Cx<'_>)`, over one context;
//! each stage file declares, in its `SPEC`, the next steps it reads and sets
//! and the drop reasons it can give.
//!
//! A burst's packets are sorted by next step into bit masks ([`Steps`]): bit
//! `i` of `steps.ip_input` says packet `i` goes to ip_input next. A stage
//! takes the mask of its step and walks its bits, so it sees only its own
//! packets, and puts each into the mask of the step it chose. Every packet is
//! in exactly one mask at any time; at the end of the burst in one of `tx`,
//! `local`'s punt (sent to the control plane), `stolen` or `drop`.
//!
//! A drop is counted where it happens, by [`Cx::drop`], under the stage that
//! dropped it and its reason: the counters and drop capture need no guessing.

use super::scratch::Scratch;
use super::txbuf::TxBuffer;
use super::Pipeline;
use crate::capture::{self, DropSite};
use crate::counters::LcoreCounters;
use crate::dpdk::{MbufBurst, BURST_SIZE};
use hooks::{DropReason, HookSet};

/// The stages, in pipeline order (the `--stage-cycles` names are theirs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    L2Input,
    IngressHook,
    IpInput,
    EgressHook,
    NeighOutput,
    Local,
    Tx,
}

impl Stage {
    /// Where drop capture records a drop of this stage.
    pub const fn capture(self) -> capture::Stage {
        match self {
            Stage::L2Input => capture::Stage::L2,
            Stage::IngressHook => capture::Stage::Ingress,
            Stage::IpInput => capture::Stage::Ip,
            Stage::EgressHook => capture::Stage::Egress,
            Stage::NeighOutput | Stage::Local => capture::Stage::Punt,
            Stage::Tx => capture::Stage::Tx,
        }
    }
}

/// A next step: the mask of [`Steps`] a packet can be put in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// IPv4 to us at l2: for ip_input.
    IpInput,
    /// IPv6 to us at l2 (our MAC, or the MAC of one of our groups): for
    /// ip6_input.
    Ip6Input,
    /// Routed: for the egress hooks and neigh_output.
    NeighOutput,
    /// For the control plane (the reason in `Scratch::punt`), within the
    /// worker's punt budget: local decides.
    Local,
    /// Out of `meta.out_port`, its Ethernet header written.
    Tx,
    /// Dropped and counted.
    Drop,
    /// Taken by a hook (which one in `Scratch::stolen_by`).
    Stolen,
}

/// What a stage file declares of itself.
#[derive(Debug)]
pub struct StageSpec {
    pub stage: Stage,
    /// The steps whose packets it works on.
    pub takes: &'static [Step],
    /// The steps it can put a packet in.
    pub sets: &'static [Step],
    /// The reasons it can drop a packet for.
    pub drops: &'static [DropReason],
}

/// A set of the burst's packets: bit `i` is packet `i`.
pub type Mask = u64;

/// The mask of packets `0..n`.
#[inline(always)]
pub fn all(n: usize) -> Mask {
    if n >= 64 {
        Mask::MAX
    } else {
        (1 << n) - 1
    }
}

/// The packets of `mask`, lowest first, each index below [`BURST_SIZE`].
#[inline(always)]
pub fn each(mask: Mask) -> Each {
    Each(mask)
}

/// Iterator over the bits of a mask.
#[derive(Clone, Copy)]
pub struct Each(Mask);

impl Iterator for Each {
    type Item = usize;
    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        // Below 64 always; the modulo lets arrays of BURST_SIZE go unchecked.
        Some(i % BURST_SIZE)
    }
}

/// The burst's packets by next step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Steps {
    pub ip_input: Mask,
    pub ip6_input: Mask,
    pub neigh_output: Mask,
    pub local: Mask,
    pub tx: Mask,
    pub drop: Mask,
    pub stolen: Mask,
}

impl Steps {
    /// The mask of `step`.
    pub fn of(&self, step: Step) -> Mask {
        match step {
            Step::IpInput => self.ip_input,
            Step::Ip6Input => self.ip6_input,
            Step::NeighOutput => self.neigh_output,
            Step::Local => self.local,
            Step::Tx => self.tx,
            Step::Drop => self.drop,
            Step::Stolen => self.stolen,
        }
    }

    /// Every step, for checks.
    pub const ALL: [Step; 7] = [
        Step::IpInput,
        Step::Ip6Input,
        Step::NeighOutput,
        Step::Local,
        Step::Tx,
        Step::Drop,
        Step::Stolen,
    ];

    /// Whether the masks are disjoint and together hold exactly `0..n`.
    pub fn is_partition(&self, n: usize) -> bool {
        let mut seen: Mask = 0;
        for step in Self::ALL {
            let m = self.of(step);
            if seen & m != 0 {
                return false;
            }
            seen |= m;
        }
        seen == all(n)
    }
}

/// Everything a stage may touch: the tables shared by the workers, the
/// burst received on `port` with the worker's per-packet state, the hook
/// chains, and the worker's counters.
pub struct Cx<'a> {
    pub pipeline: &'a Pipeline,
    /// The port the burst was received on.
    pub port: u16,
    pub hooks: &'a HookSet,
    pub burst: &'a mut MbufBurst,
    pub s: &'a mut Scratch,
    pub counters: &'a LcoreCounters,
    /// The worker's TX buffers, by port id.
    pub tx: &'a mut [Option<TxBuffer>],
    /// What goes to the control plane from this burst.
    pub to_control: &'a mut MbufBurst,
    /// The stage running now (the one [`Cx::drop`] counts under).
    pub stage: &'static StageSpec,
}

impl Cx<'_> {
    /// Drop packet `i` for `reason`: counted under the running stage and
    /// the input port, copied to a running drop capture, freed at the end
    /// of the burst.
    #[cold]
    #[inline(never)]
    pub fn drop(&mut self, i: usize, reason: DropReason) {
        let at = DropSite::new(reason, self.stage.stage.capture(), self.port);
        self.drop_at(i, at);
    }

    /// [`Cx::drop`] where more is known of the drop (its output port, the
    /// hook that dropped it).
    #[cold]
    #[inline(never)]
    pub fn drop_at(&mut self, i: usize, at: DropSite<'_>) {
        self.drop_counted(i, at, self.port);
    }

    /// [`Cx::drop_at`], counted under port `port` (the output port of a
    /// packet that cannot leave by it). The packet leaves whatever step it
    /// was in for `steps.drop`.
    #[cold]
    #[inline(never)]
    pub fn drop_counted(&mut self, i: usize, at: DropSite<'_>, port: u16) {
        debug_assert!(
            self.stage.drops.contains(&at.reason),
            "{:?} drops for {:?}, which its SPEC does not declare",
            self.stage.stage,
            at.reason
        );
        self.counters.dropped(port, at.reason, 1);
        self.counters
            .stage_dropped(self.stage.stage as usize, at.reason, 1);
        if let Some(m) = self.burst.as_slice().get(i) {
            self.pipeline.capture.capture(m.data(), at);
        }
        let steps = &mut self.s.steps;
        let bit: Mask = 1 << i;
        steps.ip_input &= !bit;
        steps.ip6_input &= !bit;
        steps.neigh_output &= !bit;
        steps.local &= !bit;
        steps.tx &= !bit;
        steps.drop |= bit;
    }
}
