//! What the two hook stages share: gather the packets of a mask into a
//! [`HookBurst`], run the chain once, turn the hooks' verdicts into drops
//! (counted here, under the hook stage, with the hook's name) and thefts;
//! the hooks' clock; handing a stolen packet over. Out of line: with no
//! hooks configured the pipeline pays one branch per burst per point
//! (`HookSet::any_ingress` / `any_egress`), never this code.

use super::contract::{all, each, Cx, Mask};
use super::ip6_input::header::ipv6_input;
use super::ip_input::header::{ipv4_input, CsumFlag};
use super::Pipeline;
use crate::capture::DropSite;
use crate::dpdk::{tsc, Mbuf, BURST_SIZE};
use arrayvec::ArrayVec;
use hooks::wire::ethernet::ethertype;
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

/// The context of the chain at `point` of `port` on this worker.
#[inline(always)]
pub fn context(p: &Pipeline, point: HookPoint, port: u16) -> HookContext {
    HookContext {
        worker: p.worker,
        point,
        port,
        now_ns: now_ns(p.ns_per_tick),
    }
}

/// Run `chain` (at `hcx.point` of `hcx.port`) over the packets of `mask`.
/// A packet a hook dropped or stole leaves every next-step mask for
/// `steps.drop` (counted) or `steps.stolen`. A frame a hook wrote is
/// checked again (`check_written`).
pub fn run_chain(cx: &mut Cx<'_>, chain: &Chain, hcx: HookContext, mask: Mask) {
    if mask == 0 {
        return;
    }
    let mut at = [0u8; BURST_SIZE];
    let mut verdicts = [Verdict::Accept; BURST_SIZE];
    let (n, judged, owner, written) = {
        let s = &mut *cx.s;
        let mut pkts = ArrayVec::<HookPacket<'_>, BURST_SIZE>::new();
        let mbufs = cx.burst.as_mut_slice();
        if mask == all(mbufs.len()) {
            // The whole burst (the common case): no mask test, no index.
            for (i, (m, meta)) in mbufs.iter_mut().zip(s.metas.iter_mut()).enumerate() {
                at[i % BURST_SIZE] = i as u8;
                pkts.push(HookPacket::new(m.data_mut(), meta));
            }
        } else {
            for (i, (m, meta)) in mbufs.iter_mut().zip(s.metas.iter_mut()).enumerate() {
                if mask & (1 << i) != 0 {
                    at[pkts.len() % BURST_SIZE] = i as u8;
                    pkts.push(HookPacket::new(m.data_mut(), meta));
                }
            }
        }
        let n = pkts.len();
        let mut burst = HookBurst::new(&mut pkts, &mut verdicts);
        // The worker's own state of each hook (its `HookWorker`) runs, as `&mut`.
        let log = chain.run(&hcx, &mut s.hooks, &mut burst);
        let judged = all(n) & !burst.accepted_mask();
        // No hook of the chain writes frames (classify, filter): nothing to look for.
        let written = chain.may_write() && pkts.iter().any(|p| p.written());
        (n, judged, log.owner, written)
    };
    for k in each(judged) {
        let i = usize::from(at[k]) % BURST_SIZE;
        let bit = 1 << i;
        match verdicts[k] {
            // (`judged` holds no accepted packet: they stay where they were.)
            Verdict::Accept => debug_assert!(false, "an accepted packet among the judged"),
            Verdict::Drop(r) => hook_drop(cx, chain, &hcx, owner[k], i, r),
            Verdict::Stolen => {
                let steps = &mut cx.s.steps;
                steps.ip_input &= !bit;
                steps.ip6_input &= !bit;
                steps.local &= !bit;
                steps.neigh_output &= !bit;
                cx.s.stolen_by[i] = (hcx.point, owner[k]);
                steps.stolen |= bit;
            }
        }
    }
    if written {
        check_written(cx, &at[..n]);
    }
}

/// Count packet `i`'s drop by entry `entry` of `chain`, under its name.
#[cold]
fn hook_drop(
    cx: &mut Cx<'_>,
    chain: &Chain,
    hcx: &HookContext,
    entry: u8,
    i: usize,
    r: hooks::DropReason,
) {
    let name = chain
        .entries()
        .get(usize::from(entry))
        .map_or("?", |e| e.name.as_str());
    let at = DropSite::new(r, cx.stage.stage.capture(), cx.port).by_hook(name);
    let at = match hcx.point {
        HookPoint::Ingress => at,
        HookPoint::Egress => at.to_port(hcx.port),
    };
    cx.drop_at(i, at);
}

/// After a chain that asked to change frames: check each packet it saw and
/// still lets through to a stage that reads its IP header (ip_input or
/// ip6_input after ingress, neigh_output after egress) as IP input checks a
/// header of its family (IPv4: version, IHL, checksum computed, total
/// length within the frame; IPv6: the fixed header's checks), at the L3
/// offset the hooks could not move, and drop a frame a hook broke under
/// that check's reason. At ingress ip_input would trust the NIC's checksum
/// flag, which speaks of the bytes before the hooks; at egress nothing after
/// the chain reads the IP header again. Every packet the chain saw is
/// checked, not only those marked written: cold, once per burst with a write.
#[cold]
#[inline(never)]
fn check_written(cx: &mut Cx<'_>, seen: &[u8]) {
    let steps = &cx.s.steps;
    let routable = steps.ip_input | steps.ip6_input | steps.neigh_output;
    for &i in seen {
        let i = usize::from(i);
        if routable & (1 << i) == 0 {
            continue;
        }
        let Some(m) = cx.burst.as_slice().get(i) else {
            continue;
        };
        let meta = &cx.s.metas[i];
        let checked = match meta.protocol {
            ethertype::IPV6 => ipv6_input(m.data(), usize::from(meta.l3_offset)).map(|_| ()),
            _ => ipv4_input(m.data(), meta, CsumFlag::Unknown).map(|_| ()),
        };
        if let Err(r) = checked {
            cx.drop(i, r);
        }
    }
}

/// Hand a stolen packet to the hook that stole it (this worker's `HookWorker` of
/// entry `entry` of the chain at `point` of `port`). Stealing is a slow
/// path: one allocation and one dynamic call per packet.
#[cold]
pub fn hand_over(
    hooks: &HookSet,
    worker_hooks: &mut WorkerHooks,
    cx: HookContext,
    entry: u8,
    mut m: Mbuf,
    meta: PacketMeta,
) {
    *m.meta_mut() = meta;
    if let Some(chain) = hooks.chain(cx.point, cx.port) {
        chain.hand_over(&cx, worker_hooks, entry, Box::new(m));
    }
}

#[cfg(test)]
mod tests {
    use super::ns_per_tick;
    use crate::datapath::contract::{Cx, StageSpec, Steps};
    use crate::datapath::l2_input::plain::{plain_meta, plain_meta6};
    use crate::datapath::testing::{frame6_ending, frame_ending as frame, Bench, BREAK_BYTE};
    use crate::datapath::{egress_hook, ingress_hook};
    use hooks::{DropReason, HookPoint};

    /// A writer hook's frames are checked again by their own family's header
    /// checks: a broken one dropped under that check's reason, the others
    /// (the family an IPv4 check would refuse among them) let through.
    #[test]
    fn written_frames_are_checked_by_their_family_s_header_checks() {
        for point in [HookPoint::Ingress, HookPoint::Egress] {
            let mut b = Bench::new();
            b.frames(&[
                frame(BREAK_BYTE),
                frame6_ending(BREAK_BYTE),
                frame(0),
                frame6_ending(0),
            ]);
            let metas = [plain_meta(0), plain_meta6(0), plain_meta(0), plain_meta6(0)];
            let steps = match point {
                HookPoint::Ingress => Steps {
                    ip_input: 0b0101,
                    ip6_input: 0b1010,
                    ..Steps::default()
                },
                HookPoint::Egress => Steps {
                    neigh_output: 0b1111,
                    ..Steps::default()
                },
            };
            b.state(steps, &metas);
            b.scratch.out_port = 0;
            b.writer_hook(point, 0);
            let (spec, stage): (&'static StageSpec, fn(&mut Cx<'_>)) = match point {
                HookPoint::Ingress => (&ingress_hook::SPEC, ingress_hook::run),
                HookPoint::Egress => (&egress_hook::SPEC, egress_hook::run),
            };
            let after = b.run(spec, stage);
            assert_eq!(after.drop, 0b0011, "{point:?}");
            assert_eq!(
                after.ip_input | after.ip6_input | after.neigh_output,
                0b1100,
                "{point:?}"
            );
            assert_eq!(b.dropped(spec, DropReason::Ipv4BadVersion), 1, "{point:?}");
            assert_eq!(b.dropped(spec, DropReason::Ipv6BadVersion), 1, "{point:?}");
        }
    }

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
