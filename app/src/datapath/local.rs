//! local: what goes to the control plane (ARP, ICMP to our addresses, the
//! ICMP errors it owes: TTL exceeded, no route, fragmentation needed;
//! packets waiting for ARP) goes within the worker's punt budgets, ARP from
//! a sender the control plane awaits ahead of the rest; over budget it is a
//! counted drop. Runs after the hooks, which see (and may drop) a punt
//! before it spends the budget.

use super::budget::{over_budget_reason, PuntBudgets};
use super::contract::{each, Cx, Stage, StageSpec, Step};
use super::punt::Punt;
use super::to_kernel;
use super::Pipeline;
use crate::capture::DropSite;
use crate::dpdk::{tsc, Mbuf};
use hooks::wire::arp;
use hooks::{DropReason, PacketMeta};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::Local,
    takes: &[Step::Local],
    sets: &[Step::Local, Step::Drop],
    // Over budget: the reason of the ICMP error that is not sent, or a
    // rate limit.
    drops: &[
        DropReason::TtlExceeded,
        DropReason::NoRoute,
        DropReason::MtuExceeded,
        DropReason::Ipv6HopLimitExceeded,
        DropReason::Ipv6NoRoute,
        DropReason::Icmpv6BeyondScope,
        DropReason::Ipv6PacketTooBig,
        DropReason::PuntRateLimited,
        DropReason::PuntSourceLimited,
        DropReason::KernelRateLimited,
        DropReason::KernelSourceLimited,
    ],
};

/// Take a budget for every packet in `steps.local`, in burst order. A burst
/// forwarded whole has none: one compare.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    if cx.s.steps.local == 0 {
        return;
    }
    budget_punts(cx);
}

#[inline(never)]
fn budget_punts(cx: &mut Cx<'_>) {
    for i in each(cx.s.steps.local) {
        let Some(m) = cx.burst.as_slice().get(i) else {
            continue;
        };
        let reason = cx.s.punt[i];
        let meta = &cx.s.metas[i];
        if let Err(r) = may_punt(cx.pipeline, &mut cx.s.budgets, reason, cx.port, m, meta) {
            let at = DropSite::new(r, SPEC.stage.capture(), cx.port);
            // Routed already: its output port is known.
            let at = match reason {
                Punt::Resolve | Punt::FragNeeded | Punt::Resolve6 | Punt::PacketTooBig => {
                    at.to_port(meta.out_port)
                }
                _ => at,
            };
            cx.drop_at(i, at);
        }
    }
}

/// Whether this worker may punt `m` (received on `port`) for `reason`:
/// within its budgets, ARP from an awaited sender ahead of the rest;
/// else the drop reason.
#[inline]
fn may_punt(
    p: &Pipeline,
    budgets: &mut PuntBudgets,
    reason: Punt,
    port: u16,
    m: &Mbuf,
    meta: &PacketMeta,
) -> Result<(), DropReason> {
    if reason == Punt::Kernel {
        // Only punted with kernel interfaces, so with their peers.
        let peers = p.kernel.as_deref().ok_or(DropReason::LocalUnsupported)?;
        return to_kernel::take(budgets, peers, port, m, meta, tsc, p.tsc_hz);
    }
    if reason != Punt::Arp {
        return match budgets.take(reason, port, tsc, p.tsc_hz) {
            true => Ok(()),
            false => Err(over_budget_reason(reason)),
        };
    }
    let sender = arp_sender(m, meta);
    let awaited = p.awaited.contains(sender);
    budgets.take_arp(port, sender, awaited, tsc, p.tsc_hz)
}

/// The sender address of an ARP packet (host order; 0 if too short): the
/// l2 stage checked neither its length nor its fields, the control plane
/// does.
#[inline]
fn arp_sender(m: &Mbuf, meta: &PacketMeta) -> u32 {
    let at = usize::from(meta.l3_offset) + arp::field::SPA;
    m.data()
        .get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::plain_meta;
    use crate::datapath::testing::{Bench, PEER_MAC, PORT_MACS};
    use hooks::testkit;

    #[test]
    fn punts_within_the_budget_pass_the_rest_are_counted_drops() {
        let frame = testkit::udp([10, 0, 1, 7], [192, 0, 2, 1], 1, 2)
            .macs(PORT_MACS[0], PEER_MAC)
            .build();
        let mut b = Bench::new();
        b.frames(&vec![frame; 32]);
        b.state(
            Steps {
                local: u64::from(u32::MAX),
                ..Steps::default()
            },
            &[plain_meta(0); 32],
        );
        b.scratch.punt = [Punt::NoRoute; 32];
        let steps = b.run(&SPEC, run);
        let passed = steps.local.count_ones();
        // The no-route budget (ICMP net unreachable) is a few per second.
        assert!(
            (1..32).contains(&passed),
            "{passed} of 32 within the budget"
        );
        assert_eq!(steps.local | steps.drop, u64::from(u32::MAX));
        assert_eq!(steps.local & steps.drop, 0);
        assert_eq!(
            b.dropped(&SPEC, DropReason::NoRoute),
            u64::from(32 - passed)
        );
        // A burst without punts is one compare.
        b.state(
            Steps {
                tx: 1,
                ..Steps::default()
            },
            &[],
        );
        assert_eq!(
            b.run(&SPEC, run),
            Steps {
                tx: 1,
                ..Steps::default()
            }
        );
    }
}
