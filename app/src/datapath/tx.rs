//! tx: every packet ends here in exactly one place. A burst that leaves
//! whole by one port goes in one `tx_burst`; otherwise each packet goes to
//! its port's TX buffer, the punt burst, the hook that stole it, or is
//! freed as a counted drop (and copied to a running drop capture).

use super::drop_site;
use super::hook_run::hand_over;
use super::{Next, Outputs, Pipeline};
use crate::capture::{DropSite, Stage, Tap};
use crate::counters::LcoreCounters;
use crate::dpdk::{Mbuf, MbufBurst};
use hooks::{DropReason, HookContext, HookPoint, HookSet};

/// Dispose of the whole burst received on `port`.
#[inline(always)]
pub fn run(p: &Pipeline, port: u16, hooks: &HookSet, burst: &mut MbufBurst, out: &mut Outputs<'_>) {
    let s = &mut *out.scratch;
    // The common case: the whole burst leaves by one port, in one call.
    if s.forwarded == burst.len() {
        if let Some(Some(txb)) = out.tx.get_mut(usize::from(s.out_port)) {
            txb.send_burst(burst, out.counters);
            return;
        }
    }
    dispose(p, port, hooks, burst, out);
}

/// Each packet to its place.
#[inline(never)]
fn dispose(p: &Pipeline, port: u16, hooks: &HookSet, burst: &mut MbufBurst, out: &mut Outputs<'_>) {
    let s = &mut *out.scratch;
    let mut dropped = MbufBurst::new();
    for (i, m) in burst.drain().enumerate() {
        let meta = &s.metas[i];
        match s.next[i] {
            Next::Forward => match out.tx.get_mut(usize::from(meta.out_port)) {
                Some(Some(txb)) => txb.push(m, out.counters),
                _ => {
                    let to = meta.out_port;
                    let at = drop_site::no_tx_queue(port, to);
                    drop_one(&mut dropped, m, out.counters, &p.capture, to, at)
                }
            },
            Next::Punt(reason) => {
                let mut m = m;
                let into = m.meta_mut();
                *into = *meta;
                into.punt = reason as u8;
                out.counters.punted(port, 1);
                // Room is certain: the punt burst is emptied after every burst.
                let _ = out.punt.push(m);
            }
            Next::OverBudget(reason, r) => {
                let at = drop_site::over_budget(r, reason, port, meta);
                drop_one(&mut dropped, m, out.counters, &p.capture, port, at)
            }
            next @ (Next::Drop(_) | Next::HookDrop(..)) => {
                let at = drop_site::of_next(next, port, meta, hooks);
                drop_one(&mut dropped, m, out.counters, &p.capture, port, at)
            }
            Next::Stolen(point, entry) => {
                let chain_port = match point {
                    HookPoint::Ingress => port,
                    HookPoint::Egress => meta.out_port,
                };
                out.counters.stolen(port, 1);
                let cx = HookContext {
                    worker: p.worker,
                    point,
                    port: chain_port,
                    now_ns: 0,
                };
                hand_over(hooks, &mut s.hooks, cx, p.ns_per_tick, entry, m, *meta);
            }
            Next::Ipv4 | Next::Neigh => {
                let at = DropSite::new(DropReason::NoRoute, Stage::Ip, port);
                drop_one(&mut dropped, m, out.counters, &p.capture, port, at)
            }
        }
    }
    drop(dropped);
    for txb in out.tx.iter_mut().flatten() {
        txb.flush(out.counters);
    }
}

/// Count `m` as dropped at `at` (attributed to `port`), hand a copy to a
/// running drop capture, and free it with the burst's other drops.
#[cold]
fn drop_one(
    dropped: &mut MbufBurst,
    m: Mbuf,
    counters: &LcoreCounters,
    tap: &Tap,
    port: u16,
    at: DropSite<'_>,
) {
    counters.dropped(port, at.reason, 1);
    tap.capture(m.data(), at);
    if let Err(m) = dropped.push(m) {
        drop(m);
    }
}
