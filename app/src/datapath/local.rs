//! local: what goes to the control plane (ARP, ICMP to our addresses,
//! and the ICMP errors it owes: TTL exceeded, no route, fragmentation
//! needed; packets waiting for ARP) goes within the worker's punt budgets,
//! ARP from a sender the control plane awaits ahead of the rest. Over
//! budget, the next step is `OverBudget`: a counted drop. Runs after the
//! hooks, which see (and may drop) a punt before it spends the budget.

use super::budget::{over_budget_reason, PuntBudgets};
use super::punt::Punt;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::{tsc, Mbuf, MbufBurst};
use hooks::{DropReason, PacketMeta};

/// Take a budget for every packet whose next step is a punt, in burst
/// order. A burst forwarded whole has none: one compare.
#[inline(always)]
pub fn run(p: &Pipeline, port: u16, burst: &MbufBurst, s: &mut Scratch) {
    if s.forwarded == burst.len() {
        return;
    }
    budget_punts(p, port, burst, s);
}

#[inline(never)]
fn budget_punts(p: &Pipeline, port: u16, burst: &MbufBurst, s: &mut Scratch) {
    for (i, m) in burst.as_slice().iter().enumerate() {
        let Next::Punt(reason) = s.next[i] else {
            continue;
        };
        if let Err(r) = may_punt(p, &mut s.budgets, reason, port, m, &s.metas[i]) {
            s.next[i] = Next::OverBudget(reason, r);
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
    const SENDER_IP: usize = 14;
    let at = usize::from(meta.l3_offset) + SENDER_IP;
    m.data()
        .get(at..at + 4)
        .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}
