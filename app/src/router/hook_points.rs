//! The two hook points of the router pipeline: ingress (after l2, per input
//! port) and egress (after routing, per output port). Each gathers the
//! packets that reach it into a [`HookBurst`], runs the port's chain once,
//! and turns the hooks' verdicts into pipeline verdicts. Out of line: with
//! no hooks configured the pipeline pays one branch per burst per point
//! (`HookSet::any_ingress` / `any_egress`), never this code.

use super::stages::{Scratch, Verdict};
use crate::dpdk::{Mbuf, BURST_SIZE};
use arrayvec::ArrayVec;
use hooks::{Chain, HookBurst, HookContext, HookPacket, HookPoint, HookSet, PacketMeta};

/// Which packets of a burst a point sees.
fn at_ingress(v: &Verdict, _: &PacketMeta, _: u16) -> bool {
    matches!(v, Verdict::Ipv4 | Verdict::Punt(super::punt::Punt::Arp))
}

fn at_egress(v: &Verdict, meta: &PacketMeta, port: u16) -> bool {
    matches!(v, Verdict::Neigh(_)) && meta.out_port == port
}

/// Run the ingress chain of `port` over the packets l2 let through.
#[inline(never)]
pub fn ingress(hooks: &HookSet, port: u16, cx: HookContext, mbufs: &mut [Mbuf], s: &mut Scratch) {
    if let Some(chain) = hooks.chain(HookPoint::Ingress, port) {
        run_chain(chain, HookContext { port, ..cx }, mbufs, s, at_ingress);
    }
}

/// Run the egress chain of every output port the routed packets go to.
#[inline(never)]
pub fn egress(hooks: &HookSet, cx: HookContext, mbufs: &mut [Mbuf], s: &mut Scratch) {
    let mut done = ArrayVec::<u16, BURST_SIZE>::new();
    for i in 0..mbufs.len() {
        if !matches!(s.verdicts[i], Verdict::Neigh(_)) {
            continue;
        }
        let port = s.metas[i].out_port;
        if done.contains(&port) {
            continue;
        }
        done.push(port);
        if let Some(chain) = hooks.chain(HookPoint::Egress, port) {
            run_chain(chain, HookContext { port, ..cx }, mbufs, s, at_egress);
        }
    }
}

fn run_chain(
    chain: &Chain,
    cx: HookContext,
    mbufs: &mut [Mbuf],
    s: &mut Scratch,
    select: fn(&Verdict, &PacketMeta, u16) -> bool,
) {
    let mut idx = ArrayVec::<u8, BURST_SIZE>::new();
    let mut pkts = ArrayVec::<HookPacket<'_>, BURST_SIZE>::new();
    for (i, (m, meta)) in mbufs.iter_mut().zip(s.metas.iter_mut()).enumerate() {
        if select(&s.verdicts[i], meta, cx.port) {
            idx.push(i as u8);
            pkts.push(HookPacket::new(m.data_mut(), meta));
        }
    }
    if pkts.is_empty() {
        return;
    }
    let mut verdicts = [hooks::Verdict::Accept; BURST_SIZE];
    let mut burst = HookBurst::new(&mut pkts, &mut verdicts);
    let log = chain.run(&cx, &mut burst);
    let n = burst.len();
    for (k, &i) in idx.iter().enumerate().take(n) {
        let i = usize::from(i);
        match verdicts[k] {
            hooks::Verdict::Accept => {}
            hooks::Verdict::Drop(r) => s.verdicts[i] = Verdict::Drop(r),
            hooks::Verdict::Stolen => s.verdicts[i] = Verdict::Stolen(cx.point, log.owner[k]),
        }
    }
}

/// Hand a stolen packet to the hook that stole it (entry `entry` of the
/// chain at `point` of `port`). Stealing is a slow path: one allocation and
/// one dynamic call per packet.
#[cold]
pub fn hand_over(hooks: &HookSet, cx: HookContext, entry: u8, mut m: Mbuf, meta: PacketMeta) {
    *m.meta_mut() = meta;
    if let Some(e) = hooks
        .chain(cx.point, cx.port)
        .and_then(|c| c.entries().get(usize::from(entry)))
    {
        let mut one = std::iter::once(Box::new(m) as Box<dyn hooks::OwnedPacket>);
        e.hook.take(&cx, &mut one);
    }
}
