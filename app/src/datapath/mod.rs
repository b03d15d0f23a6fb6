//! The router's datapath: one burst through a chain of stages, each in its
//! own file, each of one shape. A stage takes the burst (the mbufs and, in
//! the worker's [`Scratch`], each packet's metadata and [`Next`] step),
//! works on the packets whose next step is its own, in loops over the whole
//! burst, and sets their next step or drop reason:
//!
//! ```text
//! l2_input → ingress_hook → ip_input → egress_hook → neigh_output → local → tx
//! ```
//!
//! See docs/datapath.md. Safe Rust over the DPDK layer.

pub mod budget;
pub mod clock;
pub mod drop_site;
pub mod egress_hook;
pub mod hook_run;
pub mod ingress_hook;
pub mod ip_input;
pub mod l2_input;
pub mod local;
pub mod neigh_output;
pub mod next;
pub mod punt;
pub mod tx;
pub mod txbuf;

pub use clock::{Clock, Stage};
pub use next::Next;
pub use punt::Punt;

use crate::capture::Tap;
use crate::counters::LcoreCounters;
use crate::dpdk::{MbufBurst, BURST_SIZE};
use crate::fib::Fib;
use crate::neigh::NeighTable;
use crate::stage::ip::Ipv4Ok;
use budget::{ArpAwaited, PuntBudgets};
use hooks::{HookSet, PacketMeta, WorkerHooks};
use std::sync::Arc;
use txbuf::TxBuffer;

/// What every worker shares, read-only: the FIB, the neighbour table and the
/// ports' MAC addresses (indexed by port id).
pub struct Pipeline {
    pub fib: Arc<Fib>,
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
    /// TSC ticks per second (rate limit of ICMP unreachable punts).
    pub tsc_hz: u64,
    /// This worker's index (`HookContext::worker`).
    pub worker: usize,
    /// Nanoseconds per TSC tick in 32.32 fixed point (`hook_run::ns_per_tick(tsc_hz)`):
    /// the hooks' clock is one multiply and a shift, not a division.
    pub ns_per_tick: u64,
    /// This worker's way into drop capture (`crate::capture`).
    pub capture: Arc<Tap>,
}

/// The per-packet state of a burst, owned by the worker and reused burst
/// after burst, so that no burst pays for initialising it: every stage
/// writes an element before it reads it.
pub struct Scratch {
    /// How many more packets of each kind this worker may punt.
    pub(crate) budgets: PuntBudgets,
    pub(crate) metas: [PacketMeta; BURST_SIZE],
    pub(crate) next: [Next; BURST_SIZE],
    /// Set by `ip_input` for a packet it routed (next step `Neigh`): the
    /// next hop's neighbour index, or
    /// [`NEIGH_BY_DST`](crate::fib::NEIGH_BY_DST) (by `meta.next_hop`).
    pub(crate) neigh: [u32; BURST_SIZE],
    /// `ip_input`'s checked headers, by packet.
    pub(crate) oks: [Ipv4Ok; BURST_SIZE],
    /// The burst index of each of those, their destinations and LPM ids.
    pub(crate) idx: [u8; BURST_SIZE],
    pub(crate) dsts: [u32; BURST_SIZE],
    pub(crate) ids: [u32; BURST_SIZE],
    /// Set by `ip_input`: the one output port of every packet it routed
    /// (`u16::MAX` when they leave by several, or none).
    pub(crate) out_port: u16,
    /// Set by `neigh_output`: how many packets are forwarded. When that is
    /// the whole burst, every one was routed, so all leave by `out_port`.
    pub(crate) forwarded: usize,
    /// The worker's part of each hook of its hook set (refreshed at its
    /// quiescent point), run as `&mut`.
    pub hooks: WorkerHooks,
}

impl Scratch {
    /// Arrays for worker `worker` (`HookContext::worker`).
    pub fn for_worker(worker: usize) -> Self {
        Scratch {
            hooks: WorkerHooks::new(worker),
            ..Scratch::default()
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            budgets: PuntBudgets::default(),
            metas: [PacketMeta::default(); BURST_SIZE],
            next: [Next::Ipv4; BURST_SIZE],
            neigh: [0; BURST_SIZE],
            oks: [Ipv4Ok::EMPTY; BURST_SIZE],
            idx: [0; BURST_SIZE],
            dsts: [0; BURST_SIZE],
            ids: [0; BURST_SIZE],
            forwarded: 0,
            out_port: u16::MAX,
            hooks: WorkerHooks::new(0),
        }
    }
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
        let s = &mut *out.scratch;
        l2_input::run(self, port, burst, s);
        clock.lap(Stage::L2Input);
        ingress_hook::run(self, port, hooks, burst, s);
        clock.lap(Stage::IngressHook);
        ip_input::run(self, burst, s);
        clock.lap(Stage::IpInput);
        egress_hook::run(self, hooks, burst, s);
        clock.lap(Stage::EgressHook);
        neigh_output::run(self, burst, s);
        clock.lap(Stage::NeighOutput);
        local::run(self, port, burst, s);
        clock.lap(Stage::Local);
        tx::run(self, port, hooks, burst, out);
        clock.lap(Stage::Tx);
        clock.count(out.counters, n);
    }
}
