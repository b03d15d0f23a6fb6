//! egress_hook: the hook chain of each output port the routed packets go to
//! (like the netfilter egress hook), after routing and before the
//! neighbour's header is written: `meta.out_port` and `meta.next_hop` are
//! set, the frame still has its input Ethernet header.

use super::contract::{each, Cx, Mask, Stage, StageSpec, Step};
use super::hook_run::{context, run_chain};
use hooks::{DropReason, HookPoint};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::EgressHook,
    takes: &[Step::NeighOutput],
    sets: &[Step::Drop, Step::Stolen],
    // A hook may drop for any reason.
    drops: &DropReason::ALL,
};

/// Run the egress chains: one branch per burst if there are none.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    if !cx.hooks.any_egress() {
        return;
    }
    run_ports(cx);
}

/// The chain of every output port a routed packet goes to and that has
/// hooks, once each. A burst usually leaves by one port: one chain lookup.
#[inline(never)]
fn run_ports(cx: &mut Cx<'_>) {
    let hooks = cx.hooks;
    // Both families' routed packets: ip_input and ip6_input kept `out_port`.
    let routed = cx.s.steps.neigh_output;
    if routed == 0 {
        return;
    }
    if cx.s.out_port != u16::MAX {
        // ip_input saw every routed packet leave by this one port.
        let port = cx.s.out_port;
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            let hcx = context(cx.pipeline, HookPoint::Egress, port);
            run_chain(cx, chain, hcx, routed);
        }
        return;
    }
    // Each port's packets, a port at a time.
    let mut left: Mask = routed;
    while left != 0 {
        let first = left.trailing_zeros() as usize;
        let port = cx.s.metas[first % cx.s.metas.len()].out_port;
        let mut at_port: Mask = 0;
        for i in each(left) {
            at_port |= Mask::from(cx.s.metas[i].out_port == port) << i;
        }
        left &= !at_port;
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            let hcx = context(cx.pipeline, HookPoint::Egress, port);
            run_chain(cx, chain, hcx, at_port & cx.s.steps.neigh_output);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::{plain_meta, plain_meta6};
    use crate::datapath::testing::{frame6_ending, frame_ending as frame};
    use crate::datapath::testing::{Bench, DROP_BYTE, STEAL_BYTE};

    #[test]
    fn each_output_port_s_chain_sees_its_routed_packets() {
        let mut b = Bench::new();
        b.frames(&[
            frame(DROP_BYTE),
            frame(DROP_BYTE),
            frame(STEAL_BYTE),
            frame(0),
        ]);
        // Packets 0 and 2 leave by port 1 (hooked), 1 by port 0; 3 punted.
        let mut metas = [plain_meta(0); 4];
        for (m, port) in metas.iter_mut().zip([1, 0, 1, 1]) {
            m.out_port = port;
        }
        b.state(
            Steps {
                neigh_output: 0b0111,
                local: 0b1000,
                ..Steps::default()
            },
            &metas,
        );
        b.scratch.out_port = u16::MAX;
        b.hook(HookPoint::Egress, 1);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                neigh_output: 0b0010,
                local: 0b1000,
                drop: 0b0001,
                stolen: 0b0100,
                ..Steps::default()
            }
        );
        assert_eq!(b.scratch.stolen_by[2], (HookPoint::Egress, 0));
        assert_eq!(b.dropped(&SPEC, DropReason::HookDrop), 1);
    }

    #[test]
    fn routed_ipv6_packets_meet_the_chain_as_ipv4_does() {
        let mut b = Bench::new();
        b.frames(&[
            frame(DROP_BYTE),
            frame6_ending(DROP_BYTE),
            frame6_ending(STEAL_BYTE),
            frame6_ending(0),
        ]);
        // All routed out of port 1 (hooked); packets 1 to 3 are IPv6.
        let mut metas = [plain_meta6(0); 4];
        metas[0] = plain_meta(0);
        for m in &mut metas {
            m.out_port = 1;
        }
        b.state(
            Steps {
                neigh_output: 0b1111,
                ..Steps::default()
            },
            &metas,
        );
        b.scratch.out_port = 1;
        b.hook(HookPoint::Egress, 1);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                neigh_output: 0b1000,
                drop: 0b0011,
                stolen: 0b0100,
                ..Steps::default()
            }
        );
        assert_eq!(b.dropped(&SPEC, DropReason::HookDrop), 2);
    }
}
