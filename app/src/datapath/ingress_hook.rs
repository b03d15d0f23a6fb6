//! ingress_hook: the input port's hook chain (like tc clsact ingress), over
//! the packets l2_input passed (IPv4 to us, and ARP), before routing. A hook
//! may mark, classify, drop, steal or rewrite.

use super::contract::{Cx, Stage, StageSpec, Step};
use super::hook_run::{context, run_chain};
use hooks::{DropReason, HookPoint};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::IngressHook,
    takes: &[Step::IpInput, Step::Local],
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
    let mask = cx.s.steps.ip_input | cx.s.steps.local;
    if mask != 0 {
        let hcx = context(cx.pipeline, HookPoint::Ingress, cx.port);
        run_chain(cx, chain, hcx, mask);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::plain_meta;
    use crate::datapath::testing::{frame_ending as frame, Bench, DROP_BYTE, STEAL_BYTE};

    #[test]
    fn the_input_port_s_chain_sees_ipv4_and_arp_and_drops_or_steals() {
        let mut b = Bench::new();
        b.frames(&[
            frame(0),
            frame(DROP_BYTE),
            frame(STEAL_BYTE),
            frame(DROP_BYTE),
            frame(DROP_BYTE),
        ]);
        b.state(
            Steps {
                ip_input: 0b00111,
                local: 0b01000,
                drop: 0b10000,
                ..Steps::default()
            },
            &[plain_meta(0); 5],
        );
        // No chain on the port: nothing happens.
        assert_eq!(b.run(&SPEC, run).ip_input, 0b00111);
        b.hook(HookPoint::Ingress, 0);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                ip_input: 0b00001,
                drop: 0b11010,
                stolen: 0b00100,
                ..Steps::default()
            },
            "the packet already dropped is not seen again"
        );
        assert_eq!(b.scratch.stolen_by[2], (HookPoint::Ingress, 0));
        assert_eq!(b.dropped(&SPEC, DropReason::HookDrop), 2);
    }
}
