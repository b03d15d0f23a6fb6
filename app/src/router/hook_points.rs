//! The two hook points of the router pipeline: ingress (after l2, per input
//! port) and egress (after routing, per output port).
//!
//! Each gathers the packets that reach it into a [`HookBurst`], runs the
//! port's chain once, and turns the hooks' verdicts into pipeline verdicts.
//! The code is out of line: with no hooks configured the pipeline pays one
//! branch per burst per point (`HookSet::any_ingress` / `any_egress`), never
//! this code.

use super::stages::{Scratch, Verdict};
use crate::dpdk::{tsc, Mbuf, BURST_SIZE};
use crate::stage::ip::{ipv4_input, CsumFlag};
use arrayvec::ArrayVec;
use hooks::{Chain, HookBurst, HookContext, HookPacket, HookPoint, HookSet, PacketMeta};

/// Which packets of a burst a point sees.
#[inline(always)]
fn at_ingress(v: &Verdict, _: &PacketMeta, _: u16) -> bool {
    matches!(v, Verdict::Ipv4 | Verdict::Punt(super::punt::Punt::Arp))
}

#[inline(always)]
fn at_egress(v: &Verdict, meta: &PacketMeta, port: u16) -> bool {
    matches!(v, Verdict::Neigh(_)) && meta.out_port == port
}

/// Nanoseconds per tick of a `tsc_hz` clock, 32.32 fixed point.
pub fn ns_per_tick(tsc_hz: u64) -> u64 {
    ((1_000_000_000u128 << 32) / u128::from(tsc_hz.max(1))) as u64
}

/// Nanoseconds now, from the TSC and 32.32 fixed-point ns per tick.
#[inline]
pub fn now_ns(ns_per_tick: u64) -> u64 {
    ((u128::from(tsc()) * u128::from(ns_per_tick)) >> 32) as u64
}

/// Run the chain at `cx.point` of `cx.port` (which has hooks): at ingress
/// over the packets l2 let through, at egress over the packets routed to
/// that port (the fast lane's burst, which leaves by that one port).
/// Returns whether a hook asked to change a frame's bytes (the frames were
/// then checked again, and a broken one dropped). With `record`,
/// the hooks' tokens are kept in the flow memo's burst for the point, by
/// packet (or the burst is not recorded, if the chain saw a subset).
#[inline(never)]
pub fn run_point(
    chain: &Chain,
    cx: HookContext,
    ns_per_tick: u64,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
    record: bool,
) -> bool {
    let cx = HookContext {
        now_ns: now_ns(ns_per_tick),
        ..cx
    };
    match cx.point {
        HookPoint::Ingress => run_chain(chain, cx, mbufs, s, at_ingress, record),
        HookPoint::Egress => run_chain(chain, cx, mbufs, s, at_egress, record),
    }
}

/// Run the egress chain of every output port the routed packets go to and
/// that has hooks. A burst usually leaves by one port: one chain lookup.
#[inline(never)]
pub fn egress(
    hooks: &HookSet,
    cx: HookContext,
    ns_per_tick: u64,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
) {
    let mut done = ArrayVec::<u16, BURST_SIZE>::new();
    let mut last = None;
    for i in 0..mbufs.len() {
        if !matches!(s.verdicts[i], Verdict::Neigh(_)) {
            continue;
        }
        let port = s.metas[i].out_port;
        if last == Some(port) || done.contains(&port) {
            continue;
        }
        last = Some(port);
        done.push(port);
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            let cx = HookContext {
                port,
                now_ns: now_ns(ns_per_tick),
                ..cx
            };
            // A frame a hook wrote was checked again in the chain's run.
            let _written = run_chain(chain, cx, mbufs, s, at_egress, false);
        }
    }
}

/// Generic over `select` so that it inlines (a function pointer would be
/// an indirect call per packet). Returns whether a hook asked to change a
/// frame's bytes ([`HookPacket::written`]).
#[inline(always)]
fn run_chain(
    chain: &Chain,
    cx: HookContext,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
    select: impl Fn(&Verdict, &PacketMeta, u16) -> bool,
    record: bool,
) -> bool {
    let all = mbufs.len();
    let mut idx = ArrayVec::<u8, BURST_SIZE>::new();
    let mut pkts = ArrayVec::<HookPacket<'_>, BURST_SIZE>::new();
    for (i, (m, meta)) in mbufs.iter_mut().zip(s.metas.iter_mut()).enumerate() {
        if select(&s.verdicts[i], meta, cx.port) {
            idx.push(i as u8);
            pkts.push(HookPacket::new(m.data_mut(), meta));
        }
    }
    if pkts.is_empty() {
        if record {
            s.memo.forget();
        }
        return false;
    }
    let mut verdicts = [hooks::Verdict::Accept; BURST_SIZE];
    let mut burst = HookBurst::new(&mut pkts, &mut verdicts);
    let point = match cx.point {
        HookPoint::Ingress => 0,
        HookPoint::Egress => 1,
    };
    let tokens = if record {
        // Tokens are by hook burst index: the memo's packet index only
        // when the chain sees the whole burst.
        if idx.len() != all {
            s.memo.forget();
        }
        s.memo.clear_tokens(point);
        s.memo.burst.tokens.get_mut(point)
    } else {
        None
    };
    let log = chain.run_with_tokens(&cx, &mut burst, tokens);
    let n = burst.len();
    for (k, &i) in idx.iter().enumerate().take(n) {
        let i = usize::from(i);
        match verdicts[k] {
            hooks::Verdict::Accept => {}
            hooks::Verdict::Drop(r) => s.verdicts[i] = Verdict::HookDrop(cx.point, log.owner[k], r),
            hooks::Verdict::Stolen => s.verdicts[i] = Verdict::Stolen(cx.point, log.owner[k]),
        }
    }
    let written = pkts.iter().any(|p| p.written());
    drop(pkts);
    if written {
        check_written(cx.point, mbufs, s, &idx);
    }
    written
}

/// After a chain that asked to change frames: check each packet it saw and
/// still lets through as the ip stage checks a header (version, IHL,
/// checksum computed, total length within the frame), at the L3 offset the
/// hooks could not move, and drop a frame a hook broke under that check's
/// reason. At ingress the ip stage would trust the NIC's checksum flag,
/// which speaks of the bytes before the hooks; at egress nothing after the
/// chain reads the IPv4 header again. Every packet the chain saw is
/// checked, not only those marked written: cold, once per burst with a
/// write.
#[cold]
#[inline(never)]
fn check_written(point: HookPoint, mbufs: &[Mbuf], s: &mut Scratch, idx: &[u8]) {
    for &i in idx {
        let i = usize::from(i);
        let routable = match point {
            HookPoint::Ingress => s.verdicts[i] == Verdict::Ipv4,
            HookPoint::Egress => matches!(s.verdicts[i], Verdict::Neigh(_)),
        };
        let Some(m) = mbufs.get(i).filter(|_| routable) else {
            continue;
        };
        if let Err(r) = ipv4_input(m.data(), &s.metas[i], CsumFlag::Unknown) {
            s.verdicts[i] = Verdict::Drop(r);
        }
    }
}

/// Hand a stolen packet to the hook that stole it (entry `entry` of the
/// chain at `point` of `port`). Stealing is a slow path: one allocation and
/// one dynamic call per packet.
#[cold]
pub fn hand_over(
    hooks: &HookSet,
    cx: HookContext,
    ns_per_tick: u64,
    entry: u8,
    mut m: Mbuf,
    meta: PacketMeta,
) {
    *m.meta_mut() = meta;
    let cx = HookContext {
        now_ns: now_ns(ns_per_tick),
        ..cx
    };
    if let Some(e) = hooks
        .chain(cx.point, cx.port)
        .and_then(|c| c.entries().get(usize::from(entry)))
    {
        let mut one = std::iter::once(Box::new(m) as Box<dyn hooks::OwnedPacket>);
        e.hook.take(&cx, &mut one);
    }
}

#[cfg(test)]
mod tests {
    use super::ns_per_tick;

    #[test]
    fn the_hooks_clock_converts_ticks_to_nanoseconds() {
        for hz in [1_000_000_000u64, 2_600_000_000, 3_000_000_123] {
            let k = ns_per_tick(hz);
            let ticks = hz * 3600; // an hour
            let ns = ((u128::from(ticks) * u128::from(k)) >> 32) as u64;
            let want = 3_600_000_000_000u64;
            assert!(want.abs_diff(ns) < want / 1_000_000, "{hz}: {ns}");
        }
    }
}
