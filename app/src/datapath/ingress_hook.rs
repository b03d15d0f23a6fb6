//! ingress_hook: the input port's hook chain (like tc clsact ingress), over
//! the packets l2_input passed (IPv4 and IPv6 to us, and ARP), before
//! routing. A hook may mark, classify, drop, steal or rewrite.

use super::contract::{Cx, Stage, StageSpec, Step};
use super::hook_run::{context, run_chain};
use hooks::{DropReason, HookPoint};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::IngressHook,
    takes: &[Step::IpInput, Step::Ip6Input, Step::Local],
    sets: &[Step::Drop, Step::Stolen],
    // A hook may drop for any reason.
    drops: &DropReason::ALL,
};

/// Run the chain of the input port, if it has one: one branch per burst if
/// none.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    if !cx.hooks.any_ingress() {
        return;
    }
    run_port(cx);
}

#[inline(never)]
fn run_port(cx: &mut Cx<'_>) {
    let hooks = cx.hooks;
    let Some(chain) = hooks.chain(HookPoint::Ingress, cx.port) else {
        return;
    };
    // Until ip_input, `local` holds ARP only.
    let mask = cx.s.steps.ip_input | cx.s.steps.ip6_input | cx.s.steps.local;
    if mask != 0 {
        let hcx = context(cx.pipeline, HookPoint::Ingress, cx.port);
        run_chain(cx, chain, hcx, mask);
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
    fn the_input_port_s_chain_sees_ipv4_ipv6_and_arp_and_drops_or_steals() {
        let mut b = Bench::new();
        b.frames(&[
            frame(0),
            frame(DROP_BYTE),
            frame(STEAL_BYTE),
            frame(DROP_BYTE),
            frame(DROP_BYTE),
            frame6_ending(DROP_BYTE),
            frame6_ending(STEAL_BYTE),
            frame6_ending(0),
        ]);
        let mut metas = [plain_meta(0); 8];
        for m in &mut metas[5..] {
            *m = plain_meta6(0);
        }
        b.state(
            Steps {
                ip_input: 0b0000_0111,
                ip6_input: 0b1110_0000,
                local: 0b0000_1000,
                drop: 0b0001_0000,
                ..Steps::default()
            },
            &metas,
        );
        // No chain on the port: nothing happens.
        assert_eq!(b.run(&SPEC, run).ip6_input, 0b1110_0000);
        b.hook(HookPoint::Ingress, 0);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                ip_input: 0b0000_0001,
                ip6_input: 0b1000_0000,
                drop: 0b0011_1010,
                stolen: 0b0100_0100,
                ..Steps::default()
            },
            "the packet already dropped is not seen again"
        );
        assert_eq!(b.scratch.stolen_by[2], (HookPoint::Ingress, 0));
        assert_eq!(b.scratch.stolen_by[6], (HookPoint::Ingress, 0));
        assert_eq!(b.dropped(&SPEC, DropReason::HookDrop), 3);
    }
}
