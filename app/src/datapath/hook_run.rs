//! What the two hook stages share: gather the packets that reach the point
//! into a [`HookBurst`], run the chain once, turn the hooks' verdicts into
//! next steps; the hooks' clock; handing a stolen packet over. Out of line:
//! with no hooks configured the pipeline pays one branch per burst per
//! point (`HookSet::any_ingress` / `any_egress`), never this code.

use super::{Next, Scratch};
use crate::dpdk::{tsc, Mbuf, BURST_SIZE};
use crate::stage::ip::{ipv4_input, CsumFlag};
use arrayvec::ArrayVec;
use hooks::WorkerHooks;
use hooks::{Chain, HookBurst, HookContext, HookPacket, HookPoint, HookSet, PacketMeta, Verdict};

/// Nanoseconds per tick of a `tsc_hz` clock, 32.32 fixed point.
pub fn ns_per_tick(tsc_hz: u64) -> u64 {
    ((1_000_000_000u128 << 32) / u128::from(tsc_hz.max(1))) as u64
}

/// Nanoseconds now, from the TSC and 32.32 fixed-point ns per tick.
#[inline]
pub fn now_ns(ns_per_tick: u64) -> u64 {
    ((u128::from(tsc()) * u128::from(ns_per_tick)) >> 32) as u64
}

/// Run `chain` (at `cx.point` of `cx.port`) over the packets `select`
/// picks. Generic over `select` so that it inlines (a function pointer
/// would be an indirect call per packet). A frame a hook wrote is checked
/// again (`check_written`).
#[inline(always)]
pub fn run_chain(
    chain: &Chain,
    cx: HookContext,
    ns_per_tick: u64,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
    select: impl Fn(&Next, &PacketMeta) -> bool,
) {
    let cx = HookContext {
        now_ns: now_ns(ns_per_tick),
        ..cx
    };
    // The packets `select` picks, and their places in the burst.
    let mut at = [0u8; BURST_SIZE];
    let mut pkts = ArrayVec::<HookPacket<'_>, BURST_SIZE>::new();
    for (i, ((m, meta), next)) in mbufs.iter_mut().zip(&mut s.metas).zip(&s.next).enumerate() {
        if select(next, meta) {
            // `pkts` holds at most BURST_SIZE: the modulo only spares a bounds check.
            at[pkts.len() % BURST_SIZE] = i as u8;
            pkts.push(HookPacket::new(m.data_mut(), meta));
        }
    }
    let idx = &at[..pkts.len()];
    if pkts.is_empty() {
        return;
    }
    let mut verdicts = [Verdict::Accept; BURST_SIZE];
    let mut burst = HookBurst::new(&mut pkts, &mut verdicts);
    // The worker's own part of each hook runs, as `&mut`.
    let log = chain.run(&cx, &mut s.hooks, &mut burst);
    let n = burst.len();
    let all = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    // Only the packets a hook dropped or stole change their next step.
    let mut judged = all & !burst.accepted_mask();
    while judged != 0 {
        let k = judged.trailing_zeros() as usize;
        judged &= judged - 1;
        let (Some(&i), Some(&owner)) = (idx.get(k), log.owner.get(k)) else {
            continue;
        };
        let i = usize::from(i);
        match verdicts[k] {
            Verdict::Accept => {}
            Verdict::Drop(r) => s.next[i] = Next::HookDrop(cx.point, owner, r),
            Verdict::Stolen => s.next[i] = Next::Stolen(cx.point, owner),
        }
    }
    let written = pkts.iter().any(|p| p.written());
    drop(pkts);
    if written {
        check_written(cx.point, mbufs, s, idx);
    }
}

/// After a chain that asked to change frames: check each packet it saw and
/// still lets through as ip_input checks a header (version, IHL, checksum
/// computed, total length within the frame), at the L3 offset the hooks
/// could not move, and drop a frame a hook broke under that check's
/// reason. At ingress ip_input would trust the NIC's checksum flag, which
/// speaks of the bytes before the hooks; at egress nothing after the chain
/// reads the IPv4 header again. Every packet the chain saw is checked, not
/// only those marked written: cold, once per burst with a write.
#[cold]
#[inline(never)]
fn check_written(point: HookPoint, mbufs: &[Mbuf], s: &mut Scratch, idx: &[u8]) {
    for &i in idx {
        let i = usize::from(i);
        let routable = match point {
            HookPoint::Ingress => s.next[i] == Next::Ipv4,
            HookPoint::Egress => matches!(s.next[i], Next::Neigh),
        };
        let Some(m) = mbufs.get(i).filter(|_| routable) else {
            continue;
        };
        if let Err(r) = ipv4_input(m.data(), &s.metas[i], CsumFlag::Unknown) {
            s.next[i] = Next::Drop(r);
        }
    }
}

/// Hand a stolen packet to the hook that stole it (this worker's part of
/// entry `entry` of the chain at `point` of `port`). Stealing is a slow
/// path: one allocation and one dynamic call per packet.
#[cold]
pub fn hand_over(
    hooks: &HookSet,
    parts: &mut WorkerHooks,
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
    if let Some(chain) = hooks.chain(cx.point, cx.port) {
        chain.hand_over(&cx, parts, entry, Box::new(m));
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
