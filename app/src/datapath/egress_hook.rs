//! egress_hook: the hook chain of each output port the routed packets go
//! to (like the netfilter egress hook), after routing and before the
//! neighbour's header is written: `meta.out_port` and `meta.next_hop` are
//! set, the frame still has its input Ethernet header.

use super::hook_run::run_chain;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::{MbufBurst, BURST_SIZE};
use arrayvec::ArrayVec;
use hooks::{HookContext, HookPoint, HookSet};

/// Run the egress chains: one branch per burst if there are none.
#[inline(always)]
pub fn run(p: &Pipeline, hooks: &HookSet, burst: &mut MbufBurst, s: &mut Scratch) {
    if !hooks.any_egress() {
        return;
    }
    run_ports(p, hooks, burst, s);
}

/// The chain of every output port a routed packet goes to and that has
/// hooks, once each. A burst usually leaves by one port: one chain lookup.
#[inline(never)]
fn run_ports(p: &Pipeline, hooks: &HookSet, burst: &mut MbufBurst, s: &mut Scratch) {
    if s.out_port != u16::MAX {
        // ip_input saw every routed packet leave by this one port.
        let port = s.out_port;
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            let cx = context(p, port);
            let routed = |next: &Next, _: &hooks::PacketMeta| matches!(next, Next::Neigh);
            run_chain(chain, cx, p.ns_per_tick, burst.as_mut_slice(), s, routed);
        }
        return;
    }
    let mbufs = burst.as_mut_slice();
    let mut done = ArrayVec::<u16, BURST_SIZE>::new();
    let mut last = None;
    for i in 0..mbufs.len() {
        if !matches!(s.next[i], Next::Neigh) {
            continue;
        }
        let port = s.metas[i].out_port;
        if last == Some(port) || done.contains(&port) {
            continue;
        }
        last = Some(port);
        done.push(port);
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            let cx = context(p, port);
            let at_port = |next: &Next, meta: &hooks::PacketMeta| {
                matches!(next, Next::Neigh) && meta.out_port == port
            };
            run_chain(chain, cx, p.ns_per_tick, mbufs, s, at_port);
        }
    }
}

/// The context of the egress chain of `port`.
#[inline(always)]
fn context(p: &Pipeline, port: u16) -> HookContext {
    HookContext {
        worker: p.worker,
        point: HookPoint::Egress,
        port,
        now_ns: 0,
    }
}
