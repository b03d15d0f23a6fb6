//! The IPv6 next hops the LPM6's ids index: a fixed-capacity array the
//! workers read lock-free while the control plane writes, every field an
//! atomic. The rules are the IPv4 table's (`fib::hops`): a slot is written
//! while no table holds its id, and only then is a table that names it made
//! active (a release store), so a worker that finds the id reads the
//! finished slot; a slot is written again only after its id left the
//! active table and a grace period passed (`writer`).

use super::NextHop6;
use crate::fib::HopKind;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering::*};

/// One next hop, field by field; the gateway in two halves, `has_gateway`
/// for `None`.
#[derive(Debug, Default)]
struct HopSlot6 {
    kind: AtomicU8,
    has_gateway: AtomicU8,
    port: AtomicU16,
    mtu: AtomicU16,
    gateway_hi: AtomicU64,
    gateway_lo: AtomicU64,
    neigh: AtomicU32,
}

/// The kind of a stored code (a code no kind has reads as never routed).
#[inline(always)]
fn kind_of(code: u8) -> HopKind {
    match code {
        0 => HopKind::Forward,
        1 => HopKind::Local,
        2 => HopKind::NotUnicast,
        _ => HopKind::Martian,
    }
}

/// The IPv6 next-hop slots.
#[derive(Debug)]
pub(super) struct HopTable6 {
    slots: Box<[HopSlot6]>,
}

impl HopTable6 {
    pub(super) fn new(hops: usize) -> HopTable6 {
        HopTable6 {
            slots: (0..hops).map(|_| HopSlot6::default()).collect(),
        }
    }

    /// The next hop in slot `id` (`None` past the array: a miss).
    #[inline(always)]
    pub(super) fn get(&self, id: u32) -> Option<NextHop6> {
        let s = self.slots.get(id as usize)?;
        let gateway = (s.has_gateway.load(Relaxed) != 0).then(|| {
            let hi = u128::from(s.gateway_hi.load(Relaxed));
            Ipv6Addr::from_bits(hi << 64 | u128::from(s.gateway_lo.load(Relaxed)))
        });
        Some(NextHop6 {
            kind: kind_of(s.kind.load(Relaxed)),
            port: s.port.load(Relaxed),
            gateway,
            neigh: s.neigh.load(Relaxed),
            mtu: s.mtu.load(Relaxed),
        })
    }

    /// Write slot `id`, not published (no active table holds it).
    pub(super) fn write(&self, id: u32, h: &NextHop6) {
        let s = &self.slots[id as usize];
        let g = h.gateway.map_or(0, Ipv6Addr::to_bits);
        s.kind.store(h.kind as u8, Relaxed);
        s.has_gateway.store(u8::from(h.gateway.is_some()), Relaxed);
        s.port.store(h.port, Relaxed);
        s.mtu.store(h.mtu, Relaxed);
        s.gateway_hi.store((g >> 64) as u64, Relaxed);
        s.gateway_lo.store(g as u64, Relaxed);
        s.neigh.store(h.neigh, Release);
    }

    /// How many slots there are.
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }
}
