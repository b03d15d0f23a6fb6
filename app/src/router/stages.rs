//! The router's per-burst pipeline, stage by stage over the whole burst (VPP
//! style): l2 (`eth_type_trans`) → ingress hooks → local / ip (header
//! checks, one LPM bulk lookup, TTL) → egress hooks → neigh (cached header,
//! two 64-bit stores) → dispose (TX buffer, punt ring, a hook that stole the
//! packet, or a counted drop). Safe Rust over the DPDK layer.

use super::budget::{over_budget_reason, ArpAwaited, PuntBudgets};
use super::fastlane::{FastScratch, Lane, LaneEntry};
use super::fib::{flow_hash, Fib, HopKind, NextHop, NEIGH_BY_DST};
use super::flow_memo::{FlowKey, FlowMemo, Run};
use super::hook_points;
use super::punt::Punt;
use super::txbuf::TxBuffer;
use crate::capture::{DropSite, Tap};
use crate::counters::{LcoreCounters, STAGES};
use crate::dpdk::{tsc, Mbuf, MbufBurst, BURST_SIZE};
use crate::neigh::{store_header, NeighTable};
use crate::stage::ip::{
    ipv4_forward_ttl_fixed, ipv4_input_into, is_martian_source, CsumFlag, Ipv4Ok,
};
use crate::stage::l2::eth_type_trans;
use crate::stage::plain::mac_word;
use hooks::wire::ethernet::{ethertype, HEADER_LEN, MIN_FRAME_LEN};
use hooks::{DropReason, Flows, HookContext, HookPoint, HookSet, PacketMeta, PacketType};
use std::net::Ipv4Addr;
use std::sync::Arc;

/// What happens to one packet of the burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// IPv4 for the ip stage.
    Ipv4,
    /// Routed, for the neigh stage (neighbour index or NEIGH_BY_DST).
    Neigh(u32),
    /// Out of this port.
    Forward(u16),
    Punt(Punt),
    Drop(DropReason),
    /// Dropped by entry `.1` of the chain at this point (as for `Stolen`).
    HookDrop(HookPoint, u8, DropReason),
    /// Taken by entry `.1` of the chain at this point (of the input port at
    /// ingress, of `meta.out_port` at egress).
    Stolen(HookPoint, u8),
}

/// IP protocol number of ICMP.
const IPPROTO_ICMP: u8 = 1;
/// How deep the flow memo may split one burst into runs (three new flows
/// among remembered ones take six); deeper, the rest meets its hooks whole.
const MAX_SPLITS: usize = 6;

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
    /// Nanoseconds per TSC tick in 32.32 fixed point (`hook_points::ns_per_tick(tsc_hz)`):
    /// the hooks' clock is one multiply and a shift, not a division.
    pub ns_per_tick: u64,
    /// This worker's way into drop capture (`crate::capture`).
    pub capture: Arc<Tap>,
}

/// Per-burst working arrays, owned by the worker and reused burst after
/// burst, so that no burst pays for initialising them: every stage writes
/// an element before it reads it.
pub struct Scratch {
    /// How many more packets of each kind this worker may punt.
    budgets: PuntBudgets,
    pub(super) metas: [PacketMeta; BURST_SIZE],
    pub(super) verdicts: [Verdict; BURST_SIZE],
    oks: [Ipv4Ok; BURST_SIZE],
    idx: [u8; BURST_SIZE],
    dsts: [u32; BURST_SIZE],
    ids: [u32; BURST_SIZE],
    pub(super) fast: FastScratch,
    /// The worker's flow memo.
    pub(super) memo: FlowMemo,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new(0)
    }
}

impl Scratch {
    /// Arrays for a worker whose flow memo has `memo_slots` slots (0: off).
    pub fn new(memo_slots: usize) -> Self {
        Scratch {
            budgets: PuntBudgets::default(),
            metas: [PacketMeta::default(); BURST_SIZE],
            verdicts: [Verdict::Ipv4; BURST_SIZE],
            oks: [Ipv4Ok::EMPTY; BURST_SIZE],
            idx: [0; BURST_SIZE],
            dsts: [0; BURST_SIZE],
            ids: [0; BURST_SIZE],
            fast: FastScratch::default(),
            memo: FlowMemo::new(memo_slots),
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

#[inline(always)]
pub(super) fn csum_flag(m: &Mbuf) -> CsumFlag {
    match m.rx_ip_checksum() {
        Some(true) => CsumFlag::Good,
        Some(false) => CsumFlag::Bad,
        None => CsumFlag::Unknown,
    }
}

impl Pipeline {
    /// Count a burst of `n` packets from `port` to `out_port` the flow
    /// memo answered: each hook of the two chains, from its tokens, as if
    /// it had seen and accepted them. Out of line: once per burst.
    #[inline(never)]
    fn replay_hooks(&self, hooks: &HookSet, port: u16, out_port: u16, n: usize, memo: &FlowMemo) {
        let points = [(HookPoint::Ingress, port), (HookPoint::Egress, out_port)];
        for ((point, chain_port), tokens) in points.into_iter().zip(&memo.burst.tokens) {
            if let Some(chain) = hooks.chain(point, chain_port) {
                let cx = HookContext {
                    worker: self.worker,
                    point,
                    port: chain_port,
                    now_ns: 0,
                };
                chain.replay(&cx, n, tokens);
            }
        }
    }

    /// How many of the first `len` packets of the burst, a run the flow
    /// memo answered and the lane routed by the remembered `out_port`, the
    /// hooks that confirm (a stateful filter) on their path let the memo
    /// answer: the packets before the first one whose state moved since it
    /// was remembered (`len` when no chain confirms). Confirming does what
    /// seeing the packets would do to the hooks' state, so the lane must
    /// send every packet confirmed.
    #[inline(always)]
    pub(super) fn confirmed(
        &self,
        hooks: &HookSet,
        port: u16,
        out_port: u16,
        len: usize,
        memo: &mut FlowMemo,
    ) -> usize {
        if !hooks.confirms() {
            return len;
        }
        self.confirm_run(hooks, port, out_port, len, memo)
    }

    /// [`Pipeline::confirmed`] when some chain confirms. Out of line: once
    /// per burst.
    #[inline(never)]
    fn confirm_run(
        &self,
        hooks: &HookSet,
        port: u16,
        out_port: u16,
        len: usize,
        memo: &mut FlowMemo,
    ) -> usize {
        let points = [
            (HookPoint::Ingress, port, 0),
            (HookPoint::Egress, out_port, 1),
        ];
        let mut k = len;
        for (point, chain_port, row) in points {
            let Some(chain) = hooks.chain(point, chain_port).filter(|c| c.confirms()) else {
                continue;
            };
            let cx = HookContext {
                worker: self.worker,
                point,
                port: chain_port,
                now_ns: hook_points::now_ns(self.ns_per_tick),
            };
            // The egress chain keeps leases (a stateful filter's are on
            // its connection table, which the memo's out_port and
            // generation tie to the slot); an ingress chain confirms each
            // packet.
            let (keys, tokens, leases) = memo.confirm_parts();
            let make = |i: usize| keys.get(i).map_or_else(Default::default, FlowKey::summary);
            let flows = Flows::Made {
                len: k.min(keys.len()),
                make: &make,
            };
            let leases = (point == HookPoint::Egress).then_some(&mut leases[..k]);
            k = k.min(chain.confirm(&cx, flows, &tokens[row], leases));
        }
        memo.renew(k);
        if k < len {
            memo.evict(k);
        }
        k
    }

    /// Run one received burst from `port` through every stage. Every mbuf
    /// ends in a TX buffer, in `out.punt`, or freed under a drop reason; the
    /// burst is empty afterwards. With `timed`, TSC per stage is added to
    /// the lcore's stage counters. `hooks` is the snapshot of hook chains
    /// the worker took at its last quiescent point.
    #[inline(always)]
    pub fn process(
        &self,
        port: u16,
        burst: &mut MbufBurst,
        out: &mut Outputs<'_>,
        hooks: &HookSet,
        timed: bool,
    ) {
        self.process_part(port, burst, out, hooks, timed, 0);
    }

    /// [`Pipeline::process`], `splits` levels deep in a burst the flow memo
    /// split into runs: packets before a run of remembered flows go through
    /// the chains as a burst of their own, then the run past them, then
    /// the rest, in order, so the burst is never reordered. Out of line:
    /// one copy serves a burst and its parts, for a call per burst.
    #[inline(never)]
    fn process_part(
        &self,
        port: u16,
        burst: &mut MbufBurst,
        out: &mut Outputs<'_>,
        hooks: &HookSet,
        timed: bool,
        splits: usize,
    ) {
        let n = burst.len();
        let mut t = [0u64; STAGES.len() + 1];
        if timed {
            t[0] = tsc();
        }
        let port_mac = self.macs[usize::from(port)];
        if self.pad_short[usize::from(port)] {
            pad_short_frames(burst);
        }
        let ingress = if hooks.any_ingress() {
            hooks.chain(HookPoint::Ingress, port)
        } else {
            None
        };
        let cx = HookContext {
            worker: self.worker,
            point: HookPoint::Ingress,
            port,
            now_ns: 0,
        };
        let mut lane = [0u64; 3];
        let mut routed = None;
        // Whether this burst's flows are looked up in (and, if the hooks
        // accept every packet, recorded in) the flow memo.
        let mut memo = false;
        if let Some(chain) = ingress {
            // The lane's checks before the chain: a plain burst gets the
            // metadata l2 would give it without l2, and, if no hook asks to
            // change its bytes and every packet stays accepted, takes the
            // lane after the chain (its route counts as ip).
            let mac = mac_word(&port_mac);
            // A plain burst through flow-pure hooks (at ingress and every
            // egress chain, so that whatever port it leaves by, it can be
            // recorded): a run of packets whose answers the memo holds is
            // routed by the lane past both chains, each hook counting it
            // from its tokens; the packets before it meet their hooks.
            memo = chain.flow_pure() && hooks.egress_flow_pure() && out.scratch.memo.active();
            let s = &mut *out.scratch;
            let plain = if memo {
                let (keys, warmer) = s.memo.keys_and_warmer();
                self.lane_checks_keyed(port, mac, burst.as_slice(), &mut s.fast, keys, warmer)
            } else {
                self.lane_checks(mac, burst.as_slice(), &mut s.fast)
            };
            memo &= plain;
            if memo {
                let rows = [chain.entries().len(), hooks.egress_hooks_max()];
                let run = out
                    .scratch
                    .memo
                    .lookup(n, hooks.generation(), rows, splits == 0);
                let split = splits < MAX_SPLITS;
                match run {
                    Some(Run {
                        start: 0,
                        len,
                        out_port,
                    }) if len == n || split => {
                        let stamps = timed.then_some(&mut lane);
                        let entry = LaneEntry::Remembered(out_port);
                        let mbufs = &mut burst.as_mut_slice()[..len];
                        if let Some(Lane::Sent(txb, len)) = self.fast_lane(
                            port,
                            mac,
                            mbufs,
                            out.scratch,
                            hooks,
                            out.tx,
                            stamps,
                            entry,
                        ) {
                            self.replay_hooks(hooks, port, out_port, len, &out.scratch.memo);
                            out.scratch.memo.answered(len);
                            out.counters.fast_lane(port, len as u64);
                            out.counters.flow_memo(port, len as u64);
                            let t = [t[0], lane[0], lane[1], lane[2], 0];
                            let t = timed.then_some(t);
                            if len == n {
                                send_whole(txb, burst, out.counters, t);
                            } else {
                                // The rest (after a run, or after the first
                                // packet a hook did not confirm): looked up
                                // again. Each part has a packet fewer, so the
                                // depth stays under the burst size even past
                                // MAX_SPLITS (a cut run is sent whatever its
                                // length: its packets were confirmed).
                                send_whole(txb, &mut burst.split_front(len), out.counters, t);
                                self.process_part(port, burst, out, hooks, timed, splits + 1);
                            }
                            return;
                        }
                    }
                    // The packets before the run meet their hooks, then
                    // the run is answered.
                    Some(Run { start, .. }) if start > 0 && split => {
                        if timed {
                            // This pass's checks and lookup, as l2 time
                            // of the parts' packets (each counts its own).
                            let now = tsc();
                            out.counters.stage_cycles(&[t[0], now, now, now, now], 0);
                        }
                        let mut before = burst.split_front(start);
                        self.process_part(port, &mut before, out, hooks, timed, splits + 1);
                        self.process_part(port, burst, out, hooks, timed, splits + 1);
                        return;
                    }
                    _ => {}
                }
            }
            if plain {
                self.plain_l2(port, n, out.scratch);
            } else {
                self.l2_stage(port, &port_mac, burst.as_slice(), out.scratch);
            }
            let written = hook_points::run_point(
                chain,
                cx,
                self.ns_per_tick,
                burst.as_mut_slice(),
                out.scratch,
                memo,
            );
            if timed {
                t[1] = tsc();
            }
            if plain && !written {
                routed = self.fast_lane(
                    port,
                    mac,
                    burst.as_mut_slice(),
                    out.scratch,
                    hooks,
                    out.tx,
                    timed.then_some(&mut lane),
                    LaneEntry::AfterIngress,
                );
            }
        } else {
            routed = self.fast_lane(
                port,
                mac_word(&port_mac),
                burst.as_mut_slice(),
                out.scratch,
                hooks,
                out.tx,
                timed.then_some(&mut lane),
                LaneEntry::Received,
            );
            // A lane burst's check loop counts as l2.
            t[1] = lane[0];
            if routed.is_none() {
                self.l2_stage(port, &port_mac, burst.as_slice(), out.scratch);
                if timed {
                    t[1] = tsc();
                }
            }
        }
        if routed.is_none() {
            self.ip_stage(burst.as_mut_slice(), out.scratch);
        }
        let egress_cx = HookContext {
            point: HookPoint::Egress,
            ..cx
        };
        // A lane-routed burst has its output port's egress chain run below.
        let egress_done = matches!(routed, Some(Lane::Routed(_)));
        match routed {
            Some(Lane::Sent(txb, _)) => {
                if memo {
                    // Through the ingress chain and out of a port with
                    // no egress chain, every packet accepted.
                    out.scratch.memo.clear_tokens(1);
                    let out_port = out.scratch.fast.out_port;
                    out.scratch.memo.record(n, hooks.generation(), out_port);
                }
                out.counters.fast_lane(port, n as u64);
                let t = [t[0], t[1], lane[1], lane[2], 0];
                send_whole(txb, burst, out.counters, timed.then_some(t));
                return;
            }
            // Checked and routed by the lane for the output port's egress
            // chain: the chain runs; if it left every packet as it was, the
            // lane writes the headers and sends the burst, else the stages
            // from neigh on take it.
            Some(Lane::Routed(out_port)) => {
                out.counters.fast_lane(port, n as u64);
                if let Some(chain) = hooks.chain(HookPoint::Egress, out_port) {
                    let cx = HookContext {
                        port: out_port,
                        ..egress_cx
                    };
                    hook_points::run_point(
                        chain,
                        cx,
                        self.ns_per_tick,
                        burst.as_mut_slice(),
                        out.scratch,
                        memo,
                    );
                }
                if timed {
                    t[2] = tsc();
                }
                if self.lane_after_egress(out_port, burst.as_mut_slice(), out.scratch) {
                    if memo {
                        out.scratch.memo.record(n, hooks.generation(), out_port);
                    }
                    if let Some(Some(txb)) = out.tx.get_mut(usize::from(out_port)) {
                        if timed {
                            t[3] = tsc();
                        }
                        send_whole(txb, burst, out.counters, timed.then_some(t));
                        return;
                    }
                }
            }
            None => {}
        }
        let scratch = &mut *out.scratch;
        if hooks.any_egress() && !egress_done {
            hook_points::egress(
                hooks,
                egress_cx,
                self.ns_per_tick,
                burst.as_mut_slice(),
                scratch,
            );
        }
        if timed && !egress_done {
            t[2] = tsc();
        }
        let (forwarded, first_out) = self.neigh_stage(burst.as_mut_slice(), scratch);
        if timed {
            t[3] = tsc();
        }
        let Scratch {
            metas,
            verdicts,
            budgets,
            ..
        } = &mut *out.scratch;

        // The common case: the whole burst leaves by one port, in one call.
        if forwarded == n {
            if let Some(Some(txb)) = out.tx.get_mut(usize::from(first_out)) {
                send_whole(txb, burst, out.counters, timed.then_some(t));
                return;
            }
        }

        // dispose: TX buffers, punt ring, drops.
        let mut dropped = MbufBurst::new();
        for (i, m) in burst.drain().enumerate() {
            match verdicts[i] {
                Verdict::Forward(p) => match out.tx.get_mut(usize::from(p)) {
                    Some(Some(txb)) => txb.push(m, out.counters),
                    _ => {
                        let at = super::drop_site::no_tx_queue(port, p);
                        drop_one(&mut dropped, m, out.counters, &self.capture, p, at)
                    }
                },
                Verdict::Punt(reason) => {
                    match self.may_punt(budgets, reason, port, &m, &metas[i]) {
                        Err(r) => {
                            let at = super::drop_site::over_budget(r, reason, port, &metas[i]);
                            drop_one(&mut dropped, m, out.counters, &self.capture, port, at)
                        }
                        Ok(()) => {
                            let mut m = m;
                            let meta = m.meta_mut();
                            *meta = metas[i];
                            meta.punt = reason as u8;
                            out.counters.punted(port, 1);
                            // Room is certain: the punt burst is emptied after every burst.
                            let _ = out.punt.push(m);
                        }
                    }
                }
                Verdict::Drop(_) | Verdict::HookDrop(..) => {
                    let at = super::drop_site::of_verdict(verdicts[i], port, &metas[i], hooks);
                    drop_one(&mut dropped, m, out.counters, &self.capture, port, at)
                }
                Verdict::Stolen(point, entry) => {
                    let chain_port = match point {
                        HookPoint::Ingress => port,
                        HookPoint::Egress => metas[i].out_port,
                    };
                    out.counters.stolen(port, 1);
                    let cx = HookContext {
                        worker: self.worker,
                        point,
                        port: chain_port,
                        now_ns: 0,
                    };
                    hook_points::hand_over(hooks, cx, self.ns_per_tick, entry, m, metas[i]);
                }
                Verdict::Ipv4 | Verdict::Neigh(_) => {
                    let at = DropSite::new(DropReason::NoRoute, crate::capture::Stage::Ip, port);
                    drop_one(&mut dropped, m, out.counters, &self.capture, port, at)
                }
            }
        }
        drop(dropped);
        for txb in out.tx.iter_mut().flatten() {
            txb.flush(out.counters);
        }
        if timed {
            t[4] = tsc();
            out.counters.stage_cycles(&t, n as u64);
        }
    }

    /// Whether this worker may punt `m` (received on `port`) for `reason`:
    /// within its budgets, ARP from an awaited sender ahead of the rest;
    /// else the drop reason. Only punted packets come here.
    #[inline]
    fn may_punt(
        &self,
        budgets: &mut PuntBudgets,
        reason: Punt,
        port: u16,
        m: &Mbuf,
        meta: &PacketMeta,
    ) -> Result<(), DropReason> {
        if reason != Punt::Arp {
            return match budgets.take(reason, port, tsc, self.tsc_hz) {
                true => Ok(()),
                false => Err(over_budget_reason(reason)),
            };
        }
        let sender = arp_sender(m, meta);
        let awaited = self.awaited.contains(sender);
        budgets.take_arp(port, sender, awaited, tsc, self.tsc_hz)
    }

    /// l2: `eth_type_trans` of every frame, and what follows from it.
    #[inline(always)]
    fn l2_stage(&self, port: u16, port_mac: &[u8; 6], mbufs: &[Mbuf], s: &mut Scratch) {
        for (i, m) in mbufs.iter().enumerate() {
            s.metas[i] = PacketMeta::received_on(port);
            s.verdicts[i] = match eth_type_trans(m.data(), port_mac, &mut s.metas[i]) {
                Err(r) => Verdict::Drop(r),
                Ok(()) => l2_verdict(&s.metas[i]),
            };
        }
    }

    /// ip: header checks, one bulk route lookup, local / forward, TTL.
    #[inline(always)]
    fn ip_stage(&self, mbufs: &mut [Mbuf], s: &mut Scratch) {
        let mut k = 0;
        for (i, m) in mbufs.iter().enumerate() {
            if s.verdicts[i] != Verdict::Ipv4 {
                continue;
            }
            match ipv4_input_into(m.data(), &s.metas[i], csum_flag(m), &mut s.oks[k]) {
                Ok(()) => {
                    s.idx[k] = i as u8;
                    s.dsts[k] = u32::from(s.oks[k].dst);
                    k += 1;
                }
                Err(r) => s.verdicts[i] = Verdict::Drop(r),
            }
        }
        self.fib.lookup_bulk(&s.dsts[..k], &mut s.ids[..k]);
        for j in 0..k {
            let i = usize::from(s.idx[j]);
            if let Some(m) = mbufs.get_mut(i) {
                s.verdicts[i] = self.route(m, &mut s.metas[i], &s.oks[j], s.ids[j]);
            }
        }
    }

    /// neigh: the cached Ethernet header in front of every routed packet.
    /// A neighbour's header is read (seqlock) once per burst and reused for
    /// the packets that follow to the same neighbour: a burst sees one
    /// consistent header per neighbour. Returns how many packets are ready
    /// to go and, when they all leave by one port, that port (else
    /// `u16::MAX`).
    #[inline(always)]
    fn neigh_stage(&self, mbufs: &mut [Mbuf], s: &mut Scratch) -> (usize, u16) {
        let mut forwarded = 0;
        let mut first_out = None;
        let mut one_port = true;
        // (neighbour index, its header words if usable); u32::MAX: none yet.
        let mut cached: (u32, Option<[u64; 2]>) = (u32::MAX, None);
        let mut last_dst: (u32, u32) = (0, u32::MAX);
        for (i, m) in mbufs.iter_mut().enumerate() {
            let Verdict::Neigh(neigh) = s.verdicts[i] else {
                continue;
            };
            let meta = &s.metas[i];
            let index = if neigh != NEIGH_BY_DST {
                neigh
            } else if meta.next_hop == last_dst.0 {
                last_dst.1
            } else {
                let found = self.neigh.lookup(Ipv4Addr::from(meta.next_hop));
                let index = found.map_or(u32::MAX, |x| x as u32);
                last_dst = (meta.next_hop, index);
                index
            };
            if index != cached.0 {
                let words = (index != u32::MAX)
                    .then(|| self.neigh.entry(index as usize).hh_snapshot())
                    .flatten();
                cached = (index, words);
            }
            s.verdicts[i] = match (cached.1, m.eth_header_mut()) {
                (Some(words), Some(slot)) => {
                    store_header(slot, words);
                    forwarded += 1;
                    one_port &= *first_out.get_or_insert(meta.out_port) == meta.out_port;
                    Verdict::Forward(meta.out_port)
                }
                _ => Verdict::Punt(Punt::Resolve),
            };
        }
        match first_out {
            Some(p) if one_port => (forwarded, p),
            _ => (forwarded, u16::MAX),
        }
    }

    /// Route one checked IPv4 packet with its LPM result.
    #[inline(always)]
    fn route(&self, m: &mut Mbuf, meta: &mut PacketMeta, ok: &Ipv4Ok, id: u32) -> Verdict {
        if is_martian_source(ok.src) {
            return Verdict::Drop(DropReason::Martian);
        }
        let Some(hop) = self.fib.hop(id) else {
            // For an ICMP net unreachable, within the worker's budget.
            return Verdict::Punt(Punt::NoRoute);
        };
        // (By value, so that a plain next hop stays in registers.)
        let hop = if hop.kind == HopKind::Group {
            match self.group_member(m, meta, ok, hop.neigh) {
                Some(h) => h,
                None => return Verdict::Punt(Punt::NoRoute),
            }
        } else {
            hop
        };
        match hop.kind {
            HopKind::Forward => {}
            HopKind::Group => return Verdict::Punt(Punt::NoRoute),
            HopKind::Martian => return Verdict::Drop(DropReason::Martian),
            HopKind::Local if ok.protocol == IPPROTO_ICMP => return Verdict::Punt(Punt::LocalIcmp),
            HopKind::Local => return Verdict::Drop(DropReason::LocalUnsupported),
            HopKind::NotUnicast => return Verdict::Drop(DropReason::NotUnicast),
        }
        if ok.ttl <= 1 {
            return Verdict::Punt(Punt::TtlExceeded);
        }
        let l3 = usize::from(meta.l3_offset);
        if usize::from(ok.trimmed_len) - l3 > usize::from(hop.mtu) {
            return too_big(m, meta, hop.port);
        }
        let data = m.data_mut();
        let header = data.get_mut(l3..).and_then(|b| b.first_chunk_mut());
        match header.map(ipv4_forward_ttl_fixed) {
            Some(Ok(_)) => {}
            Some(Err(r)) => return Verdict::Drop(r),
            None => return Verdict::Drop(DropReason::Ipv4Truncated),
        }
        // Untagged Ethernet header and no padding from here on.
        let trimmed = usize::from(ok.trimmed_len) == data.len() || m.trim_to(ok.trimmed_len);
        if !trimmed || !m.adj((l3 - HEADER_LEN) as u16) {
            return Verdict::Drop(DropReason::Ipv4BadTotalLength);
        }
        meta.l3_offset = HEADER_LEN as u16;
        meta.out_port = hop.port;
        meta.next_hop = if hop.gateway != 0 {
            hop.gateway
        } else {
            u32::from(ok.dst)
        };
        Verdict::Neigh(hop.neigh)
    }
}

impl Pipeline {
    /// The member of the ECMP group whose word is `group` (its `neigh`)
    /// that this packet's flow takes (by the NIC's RSS hash, or the
    /// 5-tuple's). Out of line: only ECMP routes come here.
    #[inline(never)]
    fn group_member(
        &self,
        m: &Mbuf,
        meta: &PacketMeta,
        ok: &Ipv4Ok,
        group: u32,
    ) -> Option<NextHop> {
        let hash = flow_hash(m, ok, usize::from(meta.l3_offset));
        self.fib.member(group, hash)
    }
}

/// Send a burst that leaves whole by `txb`. With `stamps` (the TSC after
/// each stage up to neigh), stamp the send and count the stage cycles.
#[inline(always)]
fn send_whole(
    txb: &mut TxBuffer,
    burst: &mut MbufBurst,
    counters: &LcoreCounters,
    stamps: Option<[u64; STAGES.len() + 1]>,
) {
    let n = burst.len() as u64;
    txb.send_burst(burst, counters);
    if let Some(mut t) = stamps {
        t[STAGES.len()] = tsc();
        counters.stage_cycles(&t, n);
    }
}

/// Larger than the output MTU: fastpath does not fragment. With Don't
/// Fragment set, the sender is told the MTU (ICMP fragmentation needed,
/// within the worker's budget); without, the packet is dropped.
#[cold]
fn too_big(m: &Mbuf, meta: &mut PacketMeta, out_port: u16) -> Verdict {
    const FLAGS: usize = 6;
    const DONT_FRAGMENT: u8 = 0x40;
    let flags = m.data().get(usize::from(meta.l3_offset) + FLAGS).copied();
    if flags.is_some_and(|f| f & DONT_FRAGMENT != 0) {
        meta.out_port = out_port;
        Verdict::Punt(Punt::FragNeeded)
    } else {
        Verdict::Drop(DropReason::MtuExceeded)
    }
}

/// Pad frames under `MIN_FRAME_LEN` from devices without a wire.
#[cold]
fn pad_short_frames(burst: &mut MbufBurst) {
    for m in burst.as_mut_slice() {
        if m.data().len() < MIN_FRAME_LEN {
            m.pad_to(MIN_FRAME_LEN);
        }
    }
}

/// The sender address of an ARP packet (host order; 0 if too short): the
/// l2 stage checked neither its length nor its fields, the control plane
/// does.
#[inline]
fn arp_sender(m: &Mbuf, meta: &PacketMeta) -> u32 {
    const SENDER_IP: usize = 14;
    let at = usize::from(meta.l3_offset) + SENDER_IP;
    m.data()
        .get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Verdict of the l2 stage for a translated frame.
#[inline(always)]
fn l2_verdict(meta: &PacketMeta) -> Verdict {
    // A priority tag (VLAN id 0) is as good as untagged; other tags are for
    // VLANs this router does not have.
    if meta.vlan != 0 {
        return Verdict::Drop(DropReason::VlanNotConfigured);
    }
    match meta.protocol {
        ethertype::IPV4 if meta.packet_type == PacketType::Host => Verdict::Ipv4,
        ethertype::IPV4 => Verdict::Drop(DropReason::NotUnicast),
        ethertype::ARP => Verdict::Punt(Punt::Arp),
        _ => Verdict::Drop(DropReason::UnsupportedProtocol),
    }
}

/// Count `m` as dropped at `at` (attributed to `port`), hand a copy to a
/// running drop capture, and free it with the burst's other drops.
#[cold]
fn drop_one(
    dropped: &mut MbufBurst,
    m: Mbuf,
    counters: &LcoreCounters,
    tap: &Tap,
    port: u16,
    at: DropSite<'_>,
) {
    counters.dropped(port, at.reason, 1);
    tap.capture(m.data(), at);
    if let Err(m) = dropped.push(m) {
        drop(m);
    }
}
