//! The per-packet state of a burst, owned by the worker and reused burst
//! after burst, so that no burst pays for initialising it: a stage writes an
//! element before a later stage reads it, for the packets it passes on.

use super::budget::PuntBudgets;
use super::contract::{each, Steps};
use super::ip6_input::Ip6Burst;
use super::ip_input::header::Ipv4Fields;
use super::l2_input::plain::plain_meta;
use super::punt::Punt;
use crate::dpdk::BURST_SIZE;
use hooks::{HookPoint, PacketMeta, WorkerHooks};

/// A worker's burst state. Arrays are indexed by the packet's place in the
/// burst.
pub struct Scratch {
    /// The packets by next step.
    pub steps: Steps,
    /// Set by l2_input: the IPv4 packets whose L3 header is not at byte 14
    /// (a priority-tagged frame).
    pub tagged: u64,
    /// Set by l2_input (and by ip_input, the hooks); see `unset`.
    pub metas: [PacketMeta; BURST_SIZE],
    /// Set by l2_input for a burst that meets no hook: the plain packets
    /// whose metadata it left unwritten (it is `plain_meta` of the input
    /// port, with protocol `unset_protocol`). The forward in place writes
    /// only its route (out_port, next_hop) and neigh_output reads only
    /// that; any other reader writes the rest first
    /// ([`Scratch::fill_metas`]).
    pub unset: u64,
    /// The ethertype of the `unset` packets: the family of l2_input's first
    /// pass (IPv4 or IPv6).
    pub unset_protocol: u16,
    /// For a packet in `steps.local`: why it goes to the control plane.
    pub punt: [Punt; BURST_SIZE],
    /// Set by ip_input for a packet it routed: the next hop's neighbour
    /// index, or [`NEIGH_BY_DST`](crate::fib::NEIGH_BY_DST) (by
    /// `meta.next_hop`).
    pub neigh: [u32; BURST_SIZE],
    /// Set by ip_input for a packet the full checks took (one in `full`):
    /// its header's fields. A plain header's are read from byte 14.
    pub ipv4: [Ipv4Fields; BURST_SIZE],
    pub full: u64,
    /// ip_input's LPM entries (`FibLookup::entry`): at the packets' places
    /// when the whole burst passed the fast checks, else gathered in
    /// burst order with the packets' places in `lpm_at`.
    pub lpm_at: [u8; BURST_SIZE],
    pub lpm_entry: [u32; BURST_SIZE],
    /// ip6_input's per-burst arrays.
    pub ip6: Box<Ip6Burst>,
    /// Set by ip_input (and ip6_input): the one output port of every packet it routed
    /// (`u16::MAX` when they leave by several, or none).
    pub out_port: u16,
    /// For a packet in `steps.stolen`: the hook point and the chain entry
    /// that took it.
    pub stolen_by: [(HookPoint, u8); BURST_SIZE],
    /// How many more packets of each kind this worker may punt.
    pub budgets: PuntBudgets,
    /// The worker's state of each hook of its hook set (refreshed at its
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

impl Scratch {
    /// Write the metadata l2_input left unset of the packets of `mask`
    /// (received on `port`); `routed`: they were forwarded, and keep the
    /// route the forward wrote (out_port, next_hop).
    #[inline(always)]
    pub fn fill_metas(&mut self, mask: u64, port: u16, routed: bool) {
        let mask = mask & self.unset;
        if mask != 0 {
            self.fill_unset(mask, port, routed);
        }
    }

    #[cold]
    #[inline(never)]
    fn fill_unset(&mut self, mask: u64, port: u16, routed: bool) {
        self.unset &= !mask;
        let mut plain = plain_meta(port);
        plain.protocol = self.unset_protocol;
        for i in each(mask) {
            let meta = &mut self.metas[i];
            let (out_port, next_hop) = (meta.out_port, meta.next_hop);
            *meta = plain;
            if routed {
                meta.out_port = out_port;
                meta.next_hop = next_hop;
            }
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            steps: Steps::default(),
            tagged: 0,
            metas: [PacketMeta::default(); BURST_SIZE],
            unset: 0,
            unset_protocol: hooks::wire::ethernet::ethertype::IPV4,
            punt: [Punt::Arp; BURST_SIZE],
            neigh: [0; BURST_SIZE],
            ipv4: [Ipv4Fields::EMPTY; BURST_SIZE],
            full: 0,
            lpm_at: [0; BURST_SIZE],
            lpm_entry: [0; BURST_SIZE],
            ip6: Box::default(),
            out_port: u16::MAX,
            stolen_by: [(HookPoint::Ingress, 0); BURST_SIZE],
            budgets: PuntBudgets::default(),
            hooks: WorkerHooks::new(0),
        }
    }
}
