//! tx: the end of the burst. The forwarded packets are sent: a burst that
//! leaves whole by one port in one `tx_burst`, else each to its port's TX
//! buffer. The others go where their stage sent them: to the control
//! plane's burst, to the hook that stole them, or, dropped and counted
//! already, back to their pool.

use super::contract::{all, Cx, Stage, StageSpec, Step};
use super::hook_run::hand_over;
use super::punt::Punt;
use crate::capture::DropSite;
use crate::dpdk::{Mbuf, MbufBurst};
use hooks::{DropReason, HookPoint, PacketMeta};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::Tx,
    takes: &[Step::Tx, Step::Local, Step::Stolen, Step::Drop],
    sets: &[Step::Drop],
    // Routed to a port this worker has no TX queue on. (What a driver
    // refuses is counted by the TX buffer, as `tx_queue_full`.)
    drops: &[DropReason::NoRoute],
};

/// Send the burst's forwarded packets, hand over the rest.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    let n = cx.burst.len();
    debug_assert!(
        cx.s.steps.is_partition(n)
            && cx.s.steps.ip_input == 0
            && cx.s.steps.ip6_input == 0
            && cx.s.steps.neigh_output == 0,
        "every packet in exactly one of tx, local, stolen, drop: {:?}",
        cx.s.steps
    );
    // The common case: the whole burst leaves by one port, in one call.
    if cx.s.steps.tx == all(n) {
        if let Some(Some(txb)) = cx.tx.get_mut(usize::from(cx.s.out_port)) {
            txb.send_burst(cx.burst, cx.counters);
            return;
        }
    }
    scatter(cx);
}

/// Each packet to its place.
#[inline(never)]
fn scatter(cx: &mut Cx<'_>) {
    let no_queue = no_queue(cx);
    let steps = cx.s.steps;
    let port = cx.port;
    let mut freed = MbufBurst::new();
    for (i, m) in cx.burst.drain().enumerate() {
        let bit = 1 << i;
        let meta = &cx.s.metas[i];
        if steps.tx & bit != 0 && no_queue & bit == 0 {
            if let Some(Some(txb)) = cx.tx.get_mut(usize::from(meta.out_port)) {
                txb.push(m, cx.counters);
            }
        } else if steps.local & bit != 0 {
            cx.counters.punted(port, 1);
            to_control(cx.to_control, m, meta, cx.s.punt[i]);
        } else if steps.stolen & bit != 0 {
            cx.counters.stolen(port, 1);
            let (point, entry) = cx.s.stolen_by[i];
            let chain_port = match point {
                HookPoint::Ingress => port,
                HookPoint::Egress => meta.out_port,
            };
            let hcx = super::hook_run::context(cx.pipeline, point, chain_port);
            hand_over(cx.hooks, &mut cx.s.hooks, hcx, entry, m, *meta);
        } else if let Err(m) = freed.push(m) {
            drop(m);
        }
    }
    drop(freed);
    for txb in cx.tx.iter_mut().flatten() {
        txb.flush(cx.counters);
    }
}

/// The forwarded packets whose output port this worker has no TX queue
/// on: dropped, before the burst is taken apart.
#[inline(always)]
fn no_queue(cx: &mut Cx<'_>) -> u64 {
    let mut none = 0;
    for i in super::contract::each(cx.s.steps.tx) {
        let to = cx.s.metas[i].out_port;
        if !matches!(cx.tx.get(usize::from(to)), Some(Some(_))) {
            none |= 1 << i;
        }
    }
    if none != 0 {
        drop_no_queue(cx, none);
    }
    none
}

#[cold]
fn drop_no_queue(cx: &mut Cx<'_>, none: u64) {
    for i in super::contract::each(none) {
        let to = cx.s.metas[i].out_port;
        cx.s.steps.tx &= !(1 << i);
        cx.drop_at(
            i,
            DropSite::new(DropReason::NoRoute, SPEC.stage.capture(), cx.port).to_port(to),
        );
    }
}

/// `m` to the control plane, its metadata and punt reason in the mbuf.
#[inline]
fn to_control(burst: &mut MbufBurst, mut m: Mbuf, meta: &PacketMeta, reason: Punt) {
    let into = m.meta_mut();
    *into = *meta;
    into.punt = reason as u8;
    // Room is certain: the control plane's burst is emptied after every burst.
    let _ = burst.push(m);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::plain_meta;
    use crate::datapath::testing::{Bench, PEER_MAC, PORT_MACS};
    use hooks::testkit;

    #[test]
    fn every_packet_ends_in_its_place() {
        let frame = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(PORT_MACS[0], PEER_MAC)
            .build();
        let before = Bench::in_use();
        let mut b = Bench::new();
        b.frames(&vec![frame; 4]);
        let mut metas = [plain_meta(0); 4];
        metas[0].out_port = 1; // no TX queue on port 1 in the bench
        b.state(
            Steps {
                tx: 0b0001,
                local: 0b0010,
                drop: 0b1100,
                ..Steps::default()
            },
            &metas,
        );
        b.scratch.punt[1] = Punt::TtlExceeded;
        let steps = b.run(&SPEC, run);
        assert_eq!(steps.drop, 0b1101);
        assert_eq!(b.dropped(&SPEC, DropReason::NoRoute), 1);
        assert!(b.burst.is_empty(), "the burst is taken apart");
        assert_eq!(b.to_control.len(), 1);
        let punted = &b.to_control.as_slice()[0];
        assert_eq!(punted.meta().punt, Punt::TtlExceeded as u8);
        assert_eq!(
            b.counters.ports[0]
                .punted
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
        drop(b);
        assert_eq!(Bench::in_use(), before, "every mbuf back in its pool");
    }
}
