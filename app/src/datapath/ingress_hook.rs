//! ingress_hook: the input port's hook chain (like tc clsact ingress),
//! over the packets l2_input passed (IPv4 to us, and ARP), before routing.
//! A hook may mark, classify, drop, steal or rewrite; a dropped or stolen
//! packet's next step says by which hook.

use super::hook_run::run_chain;
use super::punt::Punt;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::MbufBurst;
use hooks::{HookContext, HookPoint, HookSet, PacketMeta};

/// Run the chain of `port`, if it has one: one branch per burst if none.
#[inline(always)]
pub fn run(p: &Pipeline, port: u16, hooks: &HookSet, burst: &mut MbufBurst, s: &mut Scratch) {
    if !hooks.any_ingress() {
        return;
    }
    run_port(p, port, hooks, burst, s);
}

#[inline(never)]
fn run_port(p: &Pipeline, port: u16, hooks: &HookSet, burst: &mut MbufBurst, s: &mut Scratch) {
    let Some(chain) = hooks.chain(HookPoint::Ingress, port) else {
        return;
    };
    let cx = HookContext {
        worker: p.worker,
        point: HookPoint::Ingress,
        port,
        now_ns: 0,
    };
    run_chain(
        chain,
        cx,
        p.ns_per_tick,
        burst.as_mut_slice(),
        s,
        at_ingress,
    );
}

/// Which packets the ingress chain sees.
#[inline(always)]
fn at_ingress(next: &Next, _: &PacketMeta) -> bool {
    matches!(next, Next::Ipv4 | Next::Punt(Punt::Arp))
}
