//! The router's fast lane: a burst of plain forwards (`stage::plain`) to one
//! resolved neighbour, all out of one port, routed in three tight loops
//! (check, route, rewrite) with no per-packet metadata or verdicts.
//!
//! # When the lane takes a burst
//!
//! * **No ingress hook** on the input port: the burst as received.
//! * **An ingress chain:** the lane's checks run first and give the plain
//!   burst the metadata l2 would have given it; after the chain the lane
//!   routes it if every packet was accepted at its untagged IPv4 header and
//!   no frame's bytes changed (marks and classes stay in the metadata).
//! * **An egress chain** on the output port: the lane stops after routing
//!   and leaves the burst as the stages' l2 and ip would have (metadata,
//!   verdicts, TTL), then finishes a burst the chain left whole.
//! * **Remembered** (`LaneEntry::Remembered`): a burst the flow memo
//!   answered for both chains enters after its checks and is routed as with
//!   no hooks, if it still leaves by the remembered port.
//!
//! # What it never does
//!
//! Any other burst is left untouched for the staged pipeline, so the lane
//! never reorders packets and never decides anything the stages would decide
//! otherwise: it only skips their bookkeeping when there is nothing to decide.

use super::fib::{HopKind, NEIGH_BY_DST};
use super::flow_memo::{FlowKey, SlotWarmer};
use super::stages::{csum_flag, Pipeline, Scratch, Verdict};
use super::txbuf::TxBuffer;
use crate::dpdk::{Mbuf, BURST_SIZE};
use crate::neigh::store_header;
use crate::stage::plain::{forward_plain, plain_ipv4, plain_meta, route_plain};
use hooks::wire::ethernet::HEADER_LEN;
use hooks::{HookPoint, HookSet, PacketMeta, MAX_BURST};
use std::net::Ipv4Addr;

/// Per-burst arrays of the fast lane, reused burst after burst; each loop
/// writes an element before the next loop reads it.
pub struct FastScratch {
    dsts: [u32; BURST_SIZE],
    ids: [u32; BURST_SIZE],
    lens: [u16; BURST_SIZE],
    words: [[u64; 2]; BURST_SIZE],
    /// For an egress chain: each packet's neighbour as the stages' ip
    /// leaves it (an index or NEIGH_BY_DST), and its next hop.
    neighs: [u32; BURST_SIZE],
    next_hops: [u32; BURST_SIZE],
    /// The output port of the burst loop 2 routed.
    pub(super) out_port: u16,
}

impl Default for FastScratch {
    fn default() -> Self {
        FastScratch {
            dsts: [0; BURST_SIZE],
            ids: [0; BURST_SIZE],
            lens: [0; BURST_SIZE],
            words: [[0; 2]; BURST_SIZE],
            neighs: [0; BURST_SIZE],
            next_hops: [0; BURST_SIZE],
            out_port: 0,
        }
    }
}

/// TSC after each loop of a timed fast-lane burst: checks, route, rewrite.
pub type LaneStamps = [u64; 3];

/// Where in the pipeline the lane is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LaneEntry {
    /// As received: nothing has run; the lane checks the frames and writes
    /// the metadata it leaves for an egress chain.
    Received,
    /// After the input port's ingress chain, on a burst
    /// [`Pipeline::lane_checks`] passed before the chain and whose bytes no
    /// hook asked to change: only packets whose verdict is still `Ipv4` at
    /// an untagged header qualify, and their metadata (with the hooks'
    /// marks and classes) is kept.
    AfterIngress,
    /// After [`Pipeline::lane_checks`], for a burst whose hooks the flow
    /// memo answered: every packet accepted and remembered leaving by this
    /// port. No chain runs; a route by another port declines the burst.
    /// Once the route is known to be the remembered one, and before
    /// anything is written, hooks that confirm (a stateful filter) check
    /// each packet's state ([`Pipeline::confirmed`]): the lane takes the
    /// packets before the first they do not confirm.
    Remembered(u16),
}

/// What the lane did with a burst it took.
pub(super) enum Lane<'t> {
    /// Routed and rewritten, the first this many packets (every packet,
    /// but for a remembered run that a confirming hook cut short: the rest
    /// is untouched, for the stages): send them on this buffer.
    Sent(&'t mut TxBuffer, usize),
    /// Checked and routed to this output port, TTL decremented, padding
    /// trimmed; the scratch metadata and verdicts are what the stages' l2
    /// and ip leave. The output port's egress chain runs, then
    /// [`Pipeline::lane_after_egress`] or the stages after it finish the
    /// burst.
    Routed(u16),
}

impl Pipeline {
    /// Route `mbufs` (received on `port`, whose MAC word is `port_mac`) in
    /// the fast lane if every one is a plain forward: see [`Lane`]. `None`:
    /// nothing was written, the burst is for the stages. With `stamps`, the
    /// TSC is read after each loop.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(super) fn fast_lane<'t>(
        &self,
        port: u16,
        port_mac: u64,
        mbufs: &mut [Mbuf],
        s: &mut Scratch,
        hooks: &HookSet,
        tx: &'t mut [Option<TxBuffer>],
        mut stamps: Option<&mut LaneStamps>,
        entry: LaneEntry,
    ) -> Option<Lane<'t>> {
        let n = mbufs.len();
        // 1. l2 and the IPv4 header checks, fused (after an ingress chain:
        // done before it; the hooks' verdicts now).
        match entry {
            LaneEntry::Received => {
                if !self.lane_checks(port_mac, mbufs, &mut s.fast) {
                    return None;
                }
            }
            LaneEntry::AfterIngress => {
                let kept = |(v, m): (&Verdict, &PacketMeta)| {
                    *v == Verdict::Ipv4 && m.l3_offset == HEADER_LEN as u16
                };
                if n == 0 || !s.verdicts[..n].iter().zip(&s.metas[..n]).all(kept) {
                    return None;
                }
            }
            LaneEntry::Remembered(_) => {}
        }
        let f = &mut s.fast;
        if let Some(s) = stamps.as_deref_mut() {
            s[0] = crate::dpdk::tsc();
        }
        // 2. One LPM bulk lookup; every next hop a forward within the MTU,
        // one output port with a TX buffer (and maybe an egress chain), a
        // neighbour with a usable header.
        self.fib.lookup_bulk(&f.dsts[..n], &mut f.ids[..n]);
        let mut out_port = u16::MAX;
        let mut egress = false;
        // The route and destination the fields below are of, and whether
        // the route's neighbour is each packet's own destination (on-link).
        let (mut route, mut dst, mut mtu, mut by_dst) = (0u32, 0u32, 0u16, false);
        // (neighbour index, its header words); u32::MAX: none yet.
        let mut cached: (u32, [u64; 2]) = (u32::MAX, [0; 2]);
        // Whether every packet goes to the one neighbour in `cached`.
        let mut one_neigh = true;
        for i in 0..n {
            // Most bursts are one route (and, on-link, one destination): its
            // checks run once.
            if i == 0 || f.ids[i] != route || (by_dst && f.dsts[i] != dst) {
                let hop = self.fib.hop(f.ids[i])?;
                if hop.kind != HopKind::Forward {
                    return None;
                }
                if i == 0 {
                    // Checked once, before any more work: a burst the
                    // stages must take is declined early.
                    out_port = hop.port;
                    f.out_port = out_port;
                    egress =
                        hooks.any_egress() && hooks.chain(HookPoint::Egress, out_port).is_some();
                    if let LaneEntry::Remembered(port) = entry {
                        // The egress chain's answer is remembered too,
                        // for this port only.
                        if port != out_port {
                            return None;
                        }
                        egress = false;
                    }
                    if !matches!(tx.get(usize::from(out_port)), Some(Some(_))) {
                        return None;
                    }
                } else if hop.port != out_port {
                    return None;
                }
                (route, dst, mtu) = (f.ids[i], f.dsts[i], hop.mtu);
                by_dst = hop.neigh == NEIGH_BY_DST;
                let index = if !by_dst {
                    hop.neigh
                } else {
                    let next_hop = if hop.gateway != 0 {
                        hop.gateway
                    } else {
                        f.dsts[i]
                    };
                    self.neigh.lookup(Ipv4Addr::from(next_hop))? as u32
                };
                if index != cached.0 {
                    one_neigh &= i == 0;
                    cached = (index, self.neigh.entry(index as usize).hh_snapshot()?);
                }
            }
            if f.lens[i] > mtu {
                return None;
            }
            f.words[i] = cached.1;
        }
        if egress {
            return self.route_for_egress(port, out_port, mbufs, s, entry);
        }
        let txb = tx.get_mut(usize::from(out_port))?.as_mut()?;
        let mut n = n;
        if let LaneEntry::Remembered(_) = entry {
            n = self.confirmed(hooks, port, out_port, n, &mut s.memo);
            if n == 0 {
                return None;
            }
        }
        let f = &mut s.fast;
        if let Some(s) = stamps.as_deref_mut() {
            s[1] = crate::dpdk::tsc();
        }
        // 3. TTL and checksum, the neighbour's header, padding trimmed.
        // With one neighbour (nearly always) its header stays in registers.
        let mbufs = &mut mbufs[..n];
        if one_neigh {
            for (m, &len) in mbufs.iter_mut().zip(&f.lens) {
                rewrite(m, len, cached.1);
            }
        } else {
            for ((m, &len), &words) in mbufs.iter_mut().zip(&f.lens).zip(&f.words) {
                rewrite(m, len, words);
            }
        }
        if let Some(s) = stamps {
            s[2] = crate::dpdk::tsc();
        }
        Some(Lane::Sent(txb, n))
    }

    /// Loop 1 of the lane: whether every one of `mbufs` (received on a
    /// port whose MAC word is `port_mac`) is a plain forward, one segment
    /// each; their destinations and lengths go to `f` for the loops after.
    /// Reads the frames, writes nothing else.
    #[inline(always)]
    pub(super) fn lane_checks(&self, port_mac: u64, mbufs: &[Mbuf], f: &mut FastScratch) -> bool {
        self.lane_checks_and(port_mac, mbufs, f, |_, _| true)
    }

    /// [`Pipeline::lane_checks`], and each packet's flow key (received on
    /// `port`) in `keys`, in the same loop: the frame is read once.
    #[inline(always)]
    pub(super) fn lane_checks_keyed(
        &self,
        port: u16,
        port_mac: u64,
        mbufs: &[Mbuf],
        f: &mut FastScratch,
        keys: &mut [FlowKey; MAX_BURST],
        warmer: SlotWarmer,
    ) -> bool {
        self.lane_checks_and(port_mac, mbufs, f, |i, frame| {
            match (keys.get_mut(i), FlowKey::of_frame(port, frame)) {
                (Some(slot), Some(key)) => {
                    warmer.warm(&key);
                    *slot = key;
                    true
                }
                // Cannot happen for a frame plain_ipv4 accepted; if it
                // did, the stages would take the burst.
                _ => false,
            }
        })
    }

    /// Loop 1, with `also(i, frame)` for each plain packet: false declines
    /// the burst.
    #[inline(always)]
    fn lane_checks_and(
        &self,
        port_mac: u64,
        mbufs: &[Mbuf],
        f: &mut FastScratch,
        mut also: impl FnMut(usize, &[u8]) -> bool,
    ) -> bool {
        if mbufs.is_empty() || mbufs.len() > BURST_SIZE {
            return false;
        }
        for (i, m) in mbufs.iter().enumerate() {
            if m.nb_segs() != 1 {
                return false;
            }
            let frame = m.data();
            let Some(plain) = plain_ipv4(frame, port_mac, csum_flag(m)) else {
                return false;
            };
            if !also(i, frame) {
                return false;
            }
            f.dsts[i] = plain.dst;
            f.lens[i] = plain.total_len;
        }
        true
    }

    /// The stages' l2 for a burst [`Pipeline::lane_checks`] passed: every
    /// packet's metadata as `eth_type_trans` gives a plain frame, verdict
    /// `Ipv4`.
    #[inline(always)]
    pub(super) fn plain_l2(&self, port: u16, n: usize, s: &mut Scratch) {
        let meta = plain_meta(port);
        s.metas[..n].fill(meta);
        s.verdicts[..n].fill(Verdict::Ipv4);
    }

    /// The lane's checked and routed burst, left as the stages' l2 and ip
    /// would leave it for an egress chain: per packet the metadata
    /// (`received_on`, then what `eth_type_trans` and `route` set; after an
    /// ingress chain, the metadata l2 and the hooks left plus what `route`
    /// sets), the verdict `Neigh` with the route's neighbour, TTL - 1, no
    /// padding. Out of line: the lane without an egress chain stays small.
    #[inline(never)]
    fn route_for_egress(
        &self,
        port: u16,
        out_port: u16,
        mbufs: &mut [Mbuf],
        s: &mut Scratch,
        entry: LaneEntry,
    ) -> Option<Lane<'static>> {
        let f = &mut s.fast;
        // Every route was checked in loop 2; still, nothing is written
        // until each packet's next hop is known.
        for (i, &id) in f.ids[..mbufs.len()].iter().enumerate() {
            let hop = self.fib.hop(id)?;
            f.neighs[i] = hop.neigh;
            f.next_hops[i] = if hop.gateway != 0 {
                hop.gateway
            } else {
                f.dsts[i]
            };
        }
        for (i, m) in mbufs.iter_mut().enumerate() {
            let routed = route_plain(m.data_mut());
            let trimmed = trim_padding(m, f.lens[i]);
            debug_assert!(routed && trimmed);
            let meta = &mut s.metas[i];
            if entry == LaneEntry::Received {
                *meta = plain_meta(port);
            }
            meta.out_port = out_port;
            meta.next_hop = f.next_hops[i];
            s.verdicts[i] = Verdict::Neigh(f.neighs[i]);
        }
        Some(Lane::Routed(out_port))
    }

    /// After the egress chain of a [`Lane::Routed`] burst: if the hooks
    /// left every packet as the lane routed it (verdict `Neigh` with the
    /// lane's neighbour, output port, next hop and untagged header), write
    /// each one's header from the neighbour snapshot of loop 2 and return
    /// true: the burst is ready to send as a whole (a consistent header per
    /// neighbour, read a chain earlier than the stages' neigh would).
    /// Otherwise, when a check fails, write nothing and return false: the
    /// stages' neigh and dispose take the burst.
    #[inline(never)]
    pub(super) fn lane_after_egress(
        &self,
        out_port: u16,
        mbufs: &mut [Mbuf],
        s: &mut Scratch,
    ) -> bool {
        let f = &s.fast;
        let n = mbufs.len();
        for i in 0..n {
            let m = &s.metas[i];
            if s.verdicts[i] != Verdict::Neigh(f.neighs[i])
                || m.out_port != out_port
                || m.next_hop != f.next_hops[i]
                || m.l3_offset != HEADER_LEN as u16
            {
                return false;
            }
        }
        // Cannot fail for frames loop 1 accepted; if it did, the stages'
        // neigh would write every header again.
        for (m, &words) in mbufs.iter_mut().zip(&f.words) {
            match m.eth_header_mut() {
                Some(slot) => store_header(slot, words),
                None => return false,
            }
        }
        true
    }
}

/// Loop 3 for one packet: TTL, checksum, header, padding.
#[inline(always)]
fn rewrite(m: &mut Mbuf, total_len: u16, words: [u64; 2]) {
    let written = forward_plain(m.data_mut(), words);
    let trimmed = trim_padding(m, total_len);
    debug_assert!(written && trimmed);
}

/// Cut a plain frame to its Ethernet header and IPv4 total length (only a
/// padded one changes). Cannot fail for what loop 1 accepted: a single
/// segment at least that long.
#[inline(always)]
fn trim_padding(m: &mut Mbuf, total_len: u16) -> bool {
    let len = HEADER_LEN as u16 + total_len;
    m.data().len() == usize::from(len) || m.trim_to(len)
}
