//! The router's datapath: each received burst through a chain of stages,
//! one file each, all of one contract (`contract.rs`): `fn run(cx: &mut Cx)`,
//! the burst's packets sorted into one bit mask per next step, each stage
//! working on its own mask only, each drop counted where it happens.
//!
//! ```text
//! l2_input → ingress_hook → ip_input → egress_hook → neigh_output → local → tx
//!                            ip6_input ↗
//! ```
//!
//! See docs/datapath.md (the stages, their next steps, the glossary). Safe
//! Rust over the DPDK layer.

pub mod budget;
pub mod clock;
pub mod contract;
pub mod egress_hook;
pub mod hook_run;
pub mod ingress_hook;
pub mod ip6_input;
pub mod ip_input;
pub mod l2_input;
pub mod local;
pub mod neigh_output;
pub mod punt;
pub mod scratch;
pub mod to_kernel;
pub mod tx;
pub mod txbuf;

#[cfg(test)]
mod fast_checks;
#[cfg(test)]
pub(crate) mod testing;

pub use clock::Clock;
pub use contract::{Cx, Stage, StageSpec, Step};
pub use punt::Punt;
pub use scratch::Scratch;

use crate::capture::Tap;
use crate::counters::LcoreCounters;
use crate::dpdk::MbufBurst;
use crate::fib::Fib;
use crate::fib6::Fib6;
use crate::neigh::NeighTable;
use budget::ArpAwaited;
use hooks::HookSet;
use ip6_input::groups::Groups6;
use std::sync::Arc;
use txbuf::TxBuffer;

/// Every stage, in pipeline order, as each declares itself.
pub const STAGES: [&StageSpec; 8] = [
    &l2_input::SPEC,
    &ingress_hook::SPEC,
    &ip_input::SPEC,
    &ip6_input::SPEC,
    &egress_hook::SPEC,
    &neigh_output::SPEC,
    &local::SPEC,
    &tx::SPEC,
];

/// What every worker shares, read-only: the FIB, the neighbour table and the
/// ports' MAC addresses (indexed by port id).
pub struct Pipeline {
    pub fib: Arc<Fib>,
    /// The IPv6 FIB; `None` when the config has no IPv6 (IPv6 frames are
    /// then dropped at l2 as `unsupported_protocol`).
    pub fib6: Option<Arc<Fib6>>,
    /// Per port id: the IPv6 groups the port belongs to, and their MACs.
    pub groups6: Arc<Groups6>,
    pub neigh: Arc<NeighTable>,
    /// ARP senders the control plane waits for: their ARP is punted ahead
    /// of the budget floods spend.
    pub awaited: Arc<ArpAwaited>,
    pub macs: Arc<[[u8; 6]]>,
    /// Per port id: the device hands over frames as the sender's kernel made
    /// them, unpadded (af_packet, tap, memif, ring: no wire in between), so
    /// frames under 60 bytes are padded as a NIC's wire would before l2 judges
    /// runts. Physical NICs deliver padded frames and keep the runt check.
    pub pad_short: Arc<[bool]>,
    /// Per port id: the device may mark IPv4 header checksums in the mbuf
    /// (its RX offloads include the IPv4 checksum). ip_input reads the flag
    /// only for these; for the others (net_pcap, net_null, af_packet) it
    /// computes every header's checksum, with no flag read per packet.
    pub rx_ip_csum: Arc<[bool]>,
    /// TSC ticks per second (rate limit of ICMP unreachable punts).
    pub tsc_hz: u64,
    /// This worker's index (`HookContext::worker`).
    pub worker: usize,
    /// Nanoseconds per TSC tick in 32.32 fixed point (`hook_run::ns_per_tick(tsc_hz)`):
    /// the hooks' clock is one multiply and a shift, not a division.
    pub ns_per_tick: u64,
    /// This worker's way into drop capture (`crate::capture`).
    pub capture: Arc<Tap>,
    /// With kernel interfaces: the routing peers, whose traffic to the
    /// kernel goes ahead of the rest. `None`: what the router does not
    /// answer itself is dropped (`local_unsupported`).
    pub kernel: Option<Arc<to_kernel::KernelPeers>>,
}

/// Where a worker's packets go: its TX buffers (indexed by port id) and the
/// punt burst for the control plane.
pub struct Outputs<'a> {
    pub tx: &'a mut [Option<TxBuffer>],
    pub punt: &'a mut MbufBurst,
    pub counters: &'a LcoreCounters,
    pub scratch: &'a mut Scratch,
}

impl Pipeline {
    /// Run one received burst from `port` through every stage, in order.
    /// Every mbuf ends in a TX buffer, in `out.punt`, stolen by a hook, or
    /// freed under a drop reason; the burst is empty afterwards. `hooks` is
    /// the snapshot the worker took at its last quiescent point. `TIMED`:
    /// add TSC cycles per stage to the lcore's counters (`--stage-cycles`).
    #[inline(never)]
    pub fn process<const TIMED: bool>(
        &self,
        port: u16,
        burst: &mut MbufBurst,
        out: &mut Outputs<'_>,
        hooks: &HookSet,
    ) {
        let n = burst.len();
        let mut clock = Clock::<TIMED>::start();
        let mut cx = Cx {
            pipeline: self,
            port,
            hooks,
            burst,
            s: &mut *out.scratch,
            counters: out.counters,
            tx: &mut *out.tx,
            to_control: &mut *out.punt,
            stage: &l2_input::SPEC,
        };
        cx.s.steps = contract::Steps::default();
        l2_input::run(&mut cx);
        clock.lap(Stage::L2Input);
        cx.stage = &ingress_hook::SPEC;
        ingress_hook::run(&mut cx);
        clock.lap(Stage::IngressHook);
        cx.stage = &ip_input::SPEC;
        ip_input::run(&mut cx);
        // Under the same stage: the IP input of both families.
        cx.stage = &ip6_input::SPEC;
        ip6_input::run(&mut cx);
        clock.lap(Stage::IpInput);
        cx.stage = &egress_hook::SPEC;
        egress_hook::run(&mut cx);
        clock.lap(Stage::EgressHook);
        cx.stage = &neigh_output::SPEC;
        neigh_output::run(&mut cx);
        clock.lap(Stage::NeighOutput);
        cx.stage = &local::SPEC;
        local::run(&mut cx);
        clock.lap(Stage::Local);
        cx.stage = &tx::SPEC;
        tx::run(&mut cx);
        clock.lap(Stage::Tx);
        clock.count(out.counters, n);
    }
}
